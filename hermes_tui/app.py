"""HermesApp: wires the agent, the session store and the widgets; owns the turn state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.worker import Worker, WorkerState

from agent import events as ev
from agent.config import Config, ConfigError
from hermes_tui import commands
from hermes_tui.bridge import AgentEvents, Bridge
from hermes_tui.screens.approval import ApprovalScreen
from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.composer import CommandHints, Composer
from hermes_tui.widgets.sessions_panel import SessionsPanel
from hermes_tui.widgets.status_panel import StatusPanel
from hermes_tui.widgets.transcript import Transcript

SESSIONS_AUTO_MIN_WIDTH = 100
STATUS_AUTO_MIN_WIDTH = 60
RESTING_STATES = frozenset({"idle", "error", "stopped", "budget", "truncated"})

# One table: the footer shows these, /help lists them, `keys:` in config.yaml remaps by id.
KEY_BINDINGS = [
    Binding("ctrl+q", "quit", "quit", id="app.quit", priority=True),
    Binding("escape", "stop", "stop", id="turn.stop"),
    Binding("ctrl+n", "new_session", "new", id="session.new", priority=True),
    Binding("f1", "help", "help", id="app.help"),
    Binding("f2", "toggle_sessions", "sessions", id="panel.sessions", priority=True),
    Binding("f3", "toggle_status", "status", id="panel.status", priority=True),
    Binding("ctrl+o", "focus_sessions", "focus sessions", id="focus.sessions", show=False),
    Binding("ctrl+l", "focus_composer", "focus input", id="focus.composer", show=False),
]


class ApprovalRequested(Message):
    """The worker waits for the user's answer to `request` in `future`."""

    def __init__(self, request: Any, future: asyncio.Future[str]) -> None:
        super().__init__()
        self.request = request
        self.future = future


class HermesApp(App[int]):
    """The full-screen app: sessions | transcript | status, composer and footer."""

    CSS_PATH = "app.tcss"
    TITLE = "hermes-tui"
    BINDINGS = KEY_BINDINGS

    def __init__(
        self,
        config: Config,
        *,
        workspace: Path | str | None = None,
        now: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        cursor_blink: bool = True,
        resume: str | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.resume_ref = resume
        self.workspace = Path(workspace or Path.cwd()).resolve()
        self.now = now
        self.clock = clock
        self.cursor_blink = cursor_blink
        self.db: Any = None
        self.agent: Any = None
        self.demo_server: Any = None
        self.bridge = Bridge(self)
        self.show_sessions: bool | None = None
        self.show_status: bool | None = None
        self.always_allowed: set[str] = set()
        self._turn_idle = asyncio.Event()
        self._turn_idle.set()
        self._pending_approvals: set[asyncio.Future[str]] = set()
        self._agent_ready = asyncio.Event()
        if config.keys:
            self.set_keymap(config.keys)

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        from textual.widgets import Footer

        with Horizontal(id="main"):
            yield SessionsPanel(id="sessions")
            with Vertical(id="centre"):
                yield Transcript(id="transcript")
                yield CommandHints(id="hints")
                yield Composer(id="composer", cursor_blink=self.cursor_blink)
            yield StatusPanel(id="status")
        # ctrl+p still opens the palette; the footer keeps its width for our keys at 80 columns.
        yield Footer(show_command_palette=False)

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        return self.query_one(Transcript)

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        return self.query_one(Composer)

    @property
    def status_panel(self) -> StatusPanel:
        """The status panel widget."""
        return self.query_one(StatusPanel)

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel widget."""
        return self.query_one(SessionsPanel)

    async def on_mount(self) -> None:
        from agent.demo import start_demo
        from agent.loop import Agent
        from storage.db import SessionDB

        self.query_one(CommandHints).show([])
        self.composer.focus()
        self._apply_panel_visibility()
        self.config, self.demo_server = start_demo(self.config)
        self.db = await SessionDB.open(self.config.db_path)
        self.agent = Agent(
            self.config,
            store=self.db,
            sink=self.bridge,
            workspace=self.workspace,
            approve=self._approve,
        )
        status = self.status_panel.status
        # "~" keeps the one-line hint short (and the same on every machine).
        hint = self.config.setup_hint.replace(str(Path.home()), "~")
        status.hint = hint if self.config.demo else ""
        self._show_model()
        self.set_interval(1.0, self._tick)
        await self.refresh_sessions()
        if self.resume_ref:
            await self.command_resume(self.resume_ref)
        self._agent_ready.set()

    async def on_unmount(self) -> None:
        for future in self._pending_approvals:
            if not future.done():
                future.set_result("no")
        if self.agent is not None:
            self.agent.stop()
            self.agent.close()
        if self.db is not None:
            await self.db.close()
        if self.demo_server is not None:
            self.demo_server.stop()

    def on_resize(self) -> None:
        self._apply_panel_visibility()

    def _apply_panel_visibility(self) -> None:
        """Panels follow the width until the user toggles them."""
        width = self.size.width
        sessions = self.show_sessions
        status = self.show_status
        self.sessions_panel.display = (
            sessions if sessions is not None else width >= SESSIONS_AUTO_MIN_WIDTH
        )
        self.status_panel.display = status if status is not None else width >= STATUS_AUTO_MIN_WIDTH

    # -- status -----------------------------------------------------------------------------
    def _show_model(self) -> None:
        status = self.status_panel.status
        status.model = self.agent.model_ref
        status.provider = self.agent.provider_name
        provider = self.config.providers.get(self.agent.provider_name)
        status.context_window = (provider.context_window if provider else None) or 128_000
        self._tick()

    def _tick(self) -> None:
        self.status_panel.refresh_status(self.clock())

    def _set_state(self, state: str, detail: str = "") -> None:
        status = self.status_panel.status
        if state in RESTING_STATES:
            status.started_at = None
        elif status.started_at is None:
            status.started_at = self.clock()
        status.state = state
        status.detail = detail
        self._tick()

    async def refresh_sessions(self) -> None:
        """Reload the sessions panel from the database."""
        sessions = await self.db.list_sessions()
        self.sessions_panel.show(sessions, self.agent.session_id, self.now())

    # -- input ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a turn runs (from submit until its last event is shown)."""
        return not self._turn_idle.is_set()

    async def on_composer_submitted(self, message: Composer.Submitted) -> None:
        if self.busy and not commands.is_command(message.text):
            await self.transcript.add_notice(
                "The agent is working: press escape to stop it; your text stays in the input.",
                "warning",
            )
            return
        self.composer.remember(message.text)
        await self.submit(message.text)

    def on_text_area_changed(self, message: Composer.Changed) -> None:
        if message.text_area is self.composer:
            self.query_one(CommandHints).show(commands.complete(message.text_area.text))

    async def submit(self, text: str) -> Worker[Any] | None:
        """Run a slash command, or start a turn with `text`; returns the turn's worker."""
        await self._agent_ready.wait()
        if commands.is_command(text):
            await self.run_command(text)
            return None
        if self.busy:
            raise RuntimeError("a turn is already running")
        self._turn_idle.clear()
        await self.transcript.add_user(text)
        self._set_state("thinking")
        return self._run_turn(text)

    async def wait_for_turn(self, timeout: float = 30.0) -> None:
        """Wait until the running turn (if any) ended and its last event is on screen."""
        await asyncio.wait_for(self._turn_idle.wait(), timeout)

    @work(thread=True, exclusive=True, exit_on_error=False, group="turn")
    def _run_turn(self, text: str) -> Any:
        return self.agent.run_turn(text)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "turn":
            return
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        # Events still buffered in the bridge belong before the end of the turn.
        await self._apply_events(self.bridge.drain())
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            await self.transcript.add_error(
                f"The turn failed unexpectedly: {type(error).__name__}: {error}. "
                "Your message is saved; send it again or start a /new session."
            )
            self._set_state("error")
        elif event.state == WorkerState.CANCELLED:
            self._set_state("idle")
        self._turn_idle.set()
        await self.refresh_sessions()

    # -- agent events -----------------------------------------------------------------------
    async def on_agent_events(self, message: AgentEvents) -> None:
        await self._apply_events(message.events)

    async def _apply_events(self, events: list[ev.AgentEvent]) -> None:
        for event in events:
            await self.transcript.apply(event)
            self._update_status(event)
            if isinstance(event, ev.TurnStarted):
                await self.refresh_sessions()

    def _update_status(self, event: ev.AgentEvent) -> None:
        status = self.status_panel.status
        match event:
            case ev.RequestStarted() | ev.ReasoningDelta():
                self._set_state("thinking")
            case ev.TextDelta():
                self._set_state("answering")
            case ev.ToolStarted(name=name):
                self._set_state("running tool", name)
            case ev.Retrying(attempt=attempt, max_attempts=most):
                self._set_state("retrying", f"attempt {attempt}/{most}")
            case ev.UsageUpdated() as usage:
                status.input_tokens = usage.total_input_tokens
                status.output_tokens = usage.total_output_tokens
                status.context_used = usage.input_tokens + usage.output_tokens
                if usage.cost_usd is not None:
                    status.cost_usd = (status.cost_usd or 0.0) + usage.cost_usd
                self._tick()
            case ev.TurnError():
                self._set_state("error")
            case ev.TurnFinished(status=outcome):
                self._set_state("idle" if outcome == "ok" else outcome)

    # -- approval (called on the worker thread) -----------------------------------------------
    def _approve(self, request: Any) -> bool:
        if request.tool in self.always_allowed:
            return True
        answer = self.call_from_thread(self._ask_approval, request)
        if answer == "always":
            self.always_allowed.add(request.tool)
        return answer in ("yes", "always")

    async def _ask_approval(self, request: Any) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending_approvals.add(future)
        # Through the app's queue behind the buffered events, so the tool block that asks
        # is on screen under the modal.
        self.bridge.flush()
        self.post_message(ApprovalRequested(request, future))
        try:
            return await future
        finally:
            self._pending_approvals.discard(future)
            self._set_state("running tool", request.tool)

    async def on_approval_requested(self, message: ApprovalRequested) -> None:
        future = message.future

        def answered(answer: str | None) -> None:
            if not future.done():
                future.set_result(answer or "no")

        self._set_state("waiting for approval", message.request.tool)
        await self.push_screen(ApprovalScreen(message.request), callback=answered)

    # -- slash commands -------------------------------------------------------------------------
    async def run_command(self, text: str) -> None:
        """Dispatch a slash command from the table; unknown ones are reported, never sent."""
        parsed = commands.parse(text)
        if parsed.command is None:
            await self.transcript.add_notice(
                f"Unknown command /{parsed.name}: /help lists the commands.", "error"
            )
            return
        await getattr(self, parsed.command.handler)(parsed.argument)

    async def _refuse_while_busy(self, what: str) -> bool:
        if self.busy:
            await self.transcript.add_notice(
                f"The agent is working: press escape to stop it before you {what}.", "warning"
            )
        return self.busy

    async def command_new(self, _argument: str = "") -> None:
        """Start a fresh session."""
        if await self._refuse_while_busy("start a new session"):
            return
        self.agent.new_session()
        self.always_allowed.clear()
        await self.transcript.clear()
        status = self.status_panel.status
        status.input_tokens = status.output_tokens = status.context_used = 0
        status.cost_usd = None
        self._set_state("idle")
        await self.refresh_sessions()

    async def command_resume(self, argument: str) -> None:
        """Resume a session by id, id prefix or title."""
        if not argument:
            await self.transcript.add_notice("Usage: /resume <id|title>.", "error")
            return
        session = await self.db.find_session(argument)
        if session is None:
            await self.transcript.add_notice(f"No session matches {argument!r}.", "error")
            return
        await self.resume_session(session["id"])

    async def resume_session(self, session_id: str) -> None:
        """Show exactly what was persisted for `session_id` and continue it (D3)."""
        if await self._refuse_while_busy("switch sessions"):
            return
        await self.db.flush()
        session = await self.db.get_session(session_id)
        if session is None:
            await self.transcript.add_notice("That session no longer exists.", "error")
            return
        rows = await self.db.load_messages(session_id)
        self.agent.attach_session(session_id, rows)
        provider = session.get("provider")
        if provider in self.config.providers and session.get("model"):
            self.agent.model_ref = f"{provider}:{session['model']}"
        self.always_allowed.clear()
        await self.transcript.load_rows(rows)
        status = self.status_panel.status
        status.input_tokens = session.get("input_tokens") or 0
        status.output_tokens = session.get("output_tokens") or 0
        status.cost_usd = session.get("estimated_cost_usd")
        status.context_used = 0
        self._show_model()
        self._set_state("idle")
        await self.refresh_sessions()
        self.composer.focus()

    async def on_sessions_panel_selected(self, message: SessionsPanel.Selected) -> None:
        await self.resume_session(message.session_id)

    async def command_sessions(self, _argument: str = "") -> None:
        """Show and focus the sessions panel."""
        self.show_sessions = True
        self._apply_panel_visibility()
        await self.refresh_sessions()
        self.sessions_panel.option_list.focus()

    async def command_model(self, argument: str) -> None:
        """Show the model, or switch to `provider:model` (a model_switch row in a session)."""
        if not argument:
            known = ", ".join(sorted(self.config.providers))
            await self.transcript.add_notice(
                f"Model: {self.agent.model_ref} (providers: {known}). "
                "Switch with /model provider:model."
            )
            return
        if await self._refuse_while_busy("switch models"):
            return
        try:
            self.agent.set_model(argument)
        except ConfigError as exc:
            await self.transcript.add_notice(str(exc), "error")
            return
        self._show_model()
        if self.agent.session_id is None:
            await self.transcript.add_notice(f"Model set to {argument} for this session.")

    async def command_title(self, argument: str) -> None:
        """Rename the current session."""
        if not argument:
            await self.transcript.add_notice("Usage: /title <text>.", "error")
            return
        if self.agent.session_id is None:
            await self.transcript.add_notice("No session yet: send a message first.", "error")
            return
        await self.db.update_session(self.agent.session_id, title=argument)
        await self.refresh_sessions()

    async def command_help(self, _argument: str = "") -> None:
        """Show commands and keys."""
        await self.push_screen(HelpScreen(self.key_help()))

    async def command_quit(self, _argument: str = "") -> None:
        """Quit."""
        self.exit(0)

    def key_help(self) -> list[tuple[str, str]]:
        """(keys, description) for every app binding, as currently mapped."""
        rows = []
        for binding in KEY_BINDINGS:
            keys = self._keymap.get(binding.id or "", binding.key).split(",")
            shown = ", ".join(self.get_key_display(Binding(key.strip(), "")) for key in keys)
            rows.append((shown, binding.description))
        return rows

    # -- actions -----------------------------------------------------------------------------
    def action_stop(self) -> None:
        """Stop the running turn."""
        if self.busy and self.agent is not None:
            self.agent.stop()

    async def action_new_session(self) -> None:
        """Start a new session."""
        await self.command_new()

    async def action_help(self) -> None:
        """Show help."""
        await self.command_help()

    def action_toggle_sessions(self) -> None:
        """Show or hide the sessions panel."""
        self.show_sessions = not self.sessions_panel.display
        self._apply_panel_visibility()

    def action_toggle_status(self) -> None:
        """Show or hide the status panel."""
        self.show_status = not self.status_panel.display
        self._apply_panel_visibility()

    async def action_focus_sessions(self) -> None:
        """Focus the sessions list (showing the panel)."""
        await self.command_sessions()

    def action_focus_composer(self) -> None:
        """Focus the composer."""
        self.composer.focus()


def run_tui(
    config: Config, *, workspace: Path | str | None = None, resume: str | None = None
) -> int:
    """Run the full-screen app until the user quits; `resume` opens a stored session first."""
    app = HermesApp(config, workspace=workspace, resume=resume)
    result = app.run()
    return result if isinstance(result, int) else (app.return_code or 0)
