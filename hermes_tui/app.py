"""HermesApp: wires the agent, the session store and the widgets; owns the turn state."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.theme import Theme
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from agent import events as ev
from agent.config import Config, ConfigError, save_ui_theme
from agent.inbox import InputQueue
from agent.liveness import StallWatchdog, TurnState
from hermes_tui import commands, theming
from hermes_tui.bridge import AgentEvents, Bridge
from hermes_tui.clipboard import clip_for
from hermes_tui.safe_text import safe_text
from hermes_tui.widgets.composer import CommandHints, Composer
from hermes_tui.widgets.key_bar import KeyBar
from hermes_tui.widgets.notes import RecoveryNote
from hermes_tui.widgets.queue_view import QueueList
from hermes_tui.widgets.sessions_panel import SessionsPanel
from hermes_tui.widgets.stall_banner import StallBanner
from hermes_tui.widgets.status_panel import StatusPanel
from hermes_tui.widgets.transcript import SessionHistory, Transcript

SESSIONS_AUTO_MIN_WIDTH = 100
STATUS_AUTO_MIN_WIDTH = 60
COMPACTING = "compacting... ({tokens} tokens of summary)"
NOT_SAVED = "This session is not being saved"
SAVING_WAITS = "Saving is waiting"  # storage.errors.lock_wait_notice: a lock, nothing lost
COMPACT_BUSY = "A turn is running: /compact works when the agent is idle."
SEARCH_LIMIT = 50
PAUSING_OUTCOMES = frozenset({"stopped", "error"})
"""Turn outcomes after which the input queue waits for the user instead of running on (T6)."""
STATUS_STREAM_SECONDS = 0.1
"""While only text streams, the status panel's token estimate is redrawn at most this often."""
BENCH_FIRST_FRAME_ENV = "HERMES_TUI_BENCH_FIRST_FRAME"
"""Set (by bench/startup.py) to make the app exit right after its first frame is painted."""

# One table: the footer shows these, /help lists them, `keys:` in config.yaml remaps by id.
KEY_BINDINGS = [
    Binding("ctrl+q", "quit", "quit", id="app.quit", priority=True),
    Binding("escape", "stop", "stop", id="turn.stop"),
    Binding("ctrl+n", "new_session", "new", id="session.new", priority=True),
    Binding("f1", "help", "help", id="app.help"),
    Binding("f2", "toggle_sessions", "sessions", id="panel.sessions", priority=True),
    Binding("f3", "toggle_status", "status", id="panel.status", priority=True),
    Binding("ctrl+o", "focus_sessions", "focus sessions", id="focus.sessions", show=False),
    Binding(
        "ctrl+g",
        "search_sessions",
        "search sessions",
        id="sessions.search",
        show=False,
        priority=True,
    ),
    Binding("ctrl+l", "focus_composer", "focus input", id="focus.composer", show=False),
    # The footer shows these three only when they can act (see check_action).
    Binding("ctrl+s", "steer_composer", "steer", id="turn.steer", priority=True),
    Binding("f5", "focus_queue", "queue", id="queue.focus", priority=True),
    Binding("ctrl+r", "resume_queue", "resume queue", id="queue.resume", priority=True),
    Binding("ctrl+t", "focus_transcript", "focus transcript", id="focus.transcript", show=False),
    Binding("f4", "copy", "copy", id="copy.answer", priority=True),
    # Priority: the focused composer would otherwise take these for its own cursor.
    Binding(
        "alt+up",
        "jump(-1)",
        "previous message",
        id="transcript.previous",
        show=False,
        priority=True,
    ),
    Binding("alt+down", "jump(1)", "next message", id="transcript.next", show=False, priority=True),
    Binding("pageup", "page(-1)", "page up", id="transcript.page_up", show=False, priority=True),
    Binding(
        "pagedown", "page(1)", "page down", id="transcript.page_down", show=False, priority=True
    ),
]


class TurnEnded(Message):
    """The turn's worker finished; posted behind any event batch already in the queue."""

    def __init__(self, worker: Worker[Any], state: WorkerState) -> None:
        super().__init__()
        self.worker = worker
        self.state = state


class CompactionEnded(Message):
    """The /compact worker finished; posted behind the compaction's own events."""

    def __init__(self, worker: Worker[Any], state: WorkerState) -> None:
        super().__init__()
        self.worker = worker
        self.state = state


class ApprovalRequested(Message):
    """The worker waits for the user's answer (a Verdict) to `request` in `future`."""

    def __init__(self, request: Any, future: asyncio.Future[Any]) -> None:
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
        approval_arm_seconds: float | None = None,
        approval_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.config = config
        # How long an approval dialog waits for a quiet moment before keys answer it (None:
        # its default), and the clock it measures that with; tests set both.
        self.approval_arm_seconds = approval_arm_seconds
        self.approval_clock = approval_clock
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
        self._turn_idle = asyncio.Event()
        self._turn_idle.set()
        self._pending_approvals: set[asyncio.Future[Any]] = set()
        self._agent_ready = asyncio.Event()
        self._froze_heap = False
        self._text_drawn = float("-inf")  # the first batch of streamed text is drawn at once
        self._status_behind: Timer | None = None
        self.input_queue = InputQueue()
        self.turn_state = TurnState()
        self.watchdog = StallWatchdog(config.agent.stall_timeout_seconds)
        self.ticks = 0
        self._not_saved_told = False
        self._turn_item: Any = None  # the queued item the running turn came from, if any
        self._quitting = False  # a quit is waiting for queued writes (a second quit: now)
        self.exit_notes: list[str] = []
        """Sentences for the terminal after the app has gone (what was not saved)."""
        if config.keys:
            self.set_keymap(config.keys)
        self.theme_notices = self._install_themes(theming.load_themes(config.home))

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield SessionsPanel(id="sessions")
            with Vertical(id="centre"):
                yield Transcript(id="transcript")
                yield StallBanner(id="stall")
                yield CommandHints(id="hints")
                yield Composer(id="composer", cursor_blink=self.cursor_blink)
            yield StatusPanel(id="status")
        # ctrl+p still opens the palette; the key bar keeps its width for our keys at 80 columns.
        yield KeyBar(id="keys")

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

    def on_mount(self) -> None:
        self.query_one(CommandHints).show([])
        self.composer.focus()
        self._apply_panel_visibility()
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if os.environ.get(BENCH_FIRST_FRAME_ENV):
            self.call_after_refresh(self.exit)
            return
        # The database, the agent and their imports come after the first frame is painted.
        self.call_after_refresh(self.run_worker, self._start_agent, group="startup")

    async def _start_agent(self) -> None:
        from agent.demo import start_demo
        from agent.loop import Agent
        from hermes_tui.store import open_store
        from storage.errors import StorageError, sentence

        self.config, self.demo_server = start_demo(self.config)
        try:
            self.db = await open_store(self.config)
        except StorageError as exc:
            # Nothing works without the database: leave with its one sentence (H7).
            self.exit_notes.append(sentence(exc))
            self.exit(return_code=1)
            return
        self.db.on_write_error = self._on_write_error
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
        self.transcript.history = SessionHistory(self.db, lambda: self.agent.session_id)
        search_key = self._key_for("sessions.search")
        self.sessions_panel.search_placeholder = f"search messages ({search_key})"
        self.set_interval(1.0, self._tick)
        await self.refresh_sessions()
        for notice in self.theme_notices:
            await self.transcript.add_notice(notice, "warning")
        if self.resume_ref:
            await self.command_resume(self.resume_ref)
        # Everything built so far (Textual, the SDKs, our modules) lives as long as the app:
        # moved out of the collector's generations, it is not rescanned by every full
        # collection while a long answer streams and mounts hundreds of Markdown blocks.
        # Collect first so no garbage is pinned; on_unmount hands it all back.
        gc.collect()
        gc.freeze()
        self._froze_heap = True
        self._agent_ready.set()

    async def on_unmount(self) -> None:
        if self._froze_heap:
            gc.unfreeze()
        if self._pending_approvals:
            from agent.tools.approvals import Verdict

            for future in self._pending_approvals:
                if not future.done():
                    future.set_result(Verdict(False))
        if self.agent is not None:
            self.agent.stop()
            self.agent.close()
        from agent.tools.shell import kill_all_children

        kill_all_children()  # no run_shell process group outlives the app (H6)
        if self.db is not None:
            await self._close_store()
        if self.demo_server is not None:
            self.demo_server.stop()

    async def _close_store(self) -> None:
        from storage.errors import StorageError, sentence

        # A quit that already waited for a held lock does not wait again (H7).
        wait = 0.0 if self._quitting else None
        try:
            await self.db.close(wait=wait)
        except StorageError as exc:
            self.exit_notes.append(sentence(exc))

    async def action_quit(self) -> None:
        """Quit; writes that another process's lock holds up get a bounded wait first (H7).

        The wait says what it waits for; quitting again leaves at once.
        """
        if self._quitting or self.db is None or self.db.idle:
            self.exit(0)
            return
        self._quitting = True
        self.run_worker(self._save_then_exit(), group="exit", exclusive=True, exit_on_error=False)

    async def _save_then_exit(self) -> None:
        from storage.errors import sentence

        quit_key = self._key_for("app.quit")

        def tell(waiting: str) -> None:
            notice = f"{sentence(waiting)[:-1]}: {quit_key} again quits now."
            self.call_later(self.transcript.add_notice, notice, "warning")

        try:
            await self.db.wait_saved(self.config.storage.exit_wait_seconds, on_wait=tell)
        finally:
            self.exit(0)

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
        status.context_window = self.agent.context_window
        self._tick()

    @property
    def stall_banner(self) -> StallBanner:
        """The stall banner above the composer."""
        return self.query_one(StallBanner)

    def _tick(self) -> None:
        """Once a second: the turn state, the busy session's clock and the stall watchdog."""
        self.ticks += 1
        try:
            self._refresh_liveness()
        except NoMatches:
            # A tick that fires while the app is shutting down finds its panels gone.
            if self.is_running:
                raise

    def _refresh_liveness(self) -> None:
        self._refresh_status()
        self._check_stall()
        working = self.clock() - self.turn_state.turn_started if self.busy else None
        self.sessions_panel.set_working(self.agent.session_id if self.agent else None, working)

    def _refresh_status(self) -> None:
        status = self.status_panel.status
        now = self.clock()
        if self._pending_approvals or not self.busy:
            status.activity, status.streamed_tokens = "", None
        else:
            status.activity = self.turn_state.describe(now)
            # An estimate from the streamed characters until the provider reports usage.
            status.streamed_tokens = self.turn_state.streamed_chars // 4
        self.status_panel.refresh_status()

    def _check_stall(self) -> None:
        """A busy turn silent while input waits shows the banner once per episode (L2)."""
        if self.agent is None:
            return
        idle_for = self.agent.activity.idle_for()
        verdict = self.watchdog.check(
            busy=self.busy and not self._pending_approvals,
            waiting=len(self.input_queue),
            idle_for=idle_for,
        )
        if verdict == "warn":
            self.stall_banner.warn(self.watchdog.message(idle_for))
        elif verdict == "clear":
            self.stall_banner.clear()
        elif self.watchdog.warned:
            self.stall_banner.update_text(self.watchdog.message(idle_for))

    def _set_state(self, state: str, detail: str = "") -> None:
        status = self.status_panel.status
        status.state = state
        status.detail = detail
        self._refresh_status()

    async def refresh_sessions(self) -> None:
        """Reload the sessions panel from the database (a failed read keeps the old list)."""
        from storage.errors import StorageError, sentence

        try:
            sessions = await self.db.list_sessions()
        except StorageError as exc:
            if not self._not_saved_told:
                self._not_saved_told = True
                await self.transcript.add_notice(sentence(exc), "error")
            return
        self.sessions_panel.show(sessions, self.agent.session_id, self.now())

    # -- input ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a turn runs (from submit until its last event is shown)."""
        return not self._turn_idle.is_set()

    async def on_composer_submitted(self, message: Composer.Submitted) -> None:
        self.composer.remember(message.text)
        await self.submit(message.text)

    def on_text_area_changed(self, message: Composer.Changed) -> None:
        if message.text_area is self.composer:
            self.query_one(CommandHints).show(commands.complete(message.text_area.text))

    async def submit(self, text: str) -> Worker[Any] | None:
        """Run a slash command, or send `text` as Enter does; returns a new turn's worker."""
        await self._agent_ready.wait()
        if commands.is_command(text):
            await self.run_command(text)
            return None
        return await self.send(text, self.config.agent.busy_input_mode)

    async def send(self, text: str, mode: str) -> Worker[Any] | None:
        """Start a turn when idle; during a turn queue, steer or redirect (`mode`) the text (T1).

        Nothing is dropped: a steer or redirect that no turn takes joins the queue behind
        older items. Sending while idle also releases a queue paused by a stop (T6).
        """
        await self._agent_ready.wait()
        if not self.busy:
            self.input_queue.resume()
            return await self._start_turn(text)
        if mode == "steer" and self.agent.steer(text):
            await self.transcript.add_notice(
                f"↳ steer sent: it reaches the model after the current step. {_quote(text)}"
            )
        elif mode == "interrupt" and self.agent.redirect(text):
            await self.transcript.add_notice(f"↳ redirecting the model: {_quote(text)}")
        else:
            origin = {"steer": "steer", "interrupt": "redirect"}.get(mode, "queued")
            self.input_queue.push(text, origin)
            self._show_queue()
        return None

    async def _start_turn(self, text: str, item: Any = None) -> Worker[Any]:
        self._turn_item = item
        self._turn_idle.clear()
        self.turn_state.apply(ev.TurnStarted("", text), self.clock())
        await self.transcript.add_user(text)
        self._set_state("working")
        self.refresh_bindings()
        return self._run_turn(text)

    async def wait_for_turn(self, timeout: float = 30.0) -> None:
        """Wait until no turn runs (queued input that runs on counts as the same wait)."""
        await asyncio.wait_for(self._turn_idle.wait(), timeout)

    @work(thread=True, exclusive=True, exit_on_error=False, group="turn")
    def _run_turn(self, text: str) -> Any:
        return self.agent.run_turn(text)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        if event.worker.group == "compact":
            self.post_message(CompactionEnded(event.worker, event.state))
        if event.worker.group != "turn":
            return
        # A batch the bridge posted before the worker ended may still wait in the app's
        # queue: a message posted now is handled after it, so the turn ends after its events.
        self.post_message(TurnEnded(event.worker, event.state))

    async def on_turn_ended(self, event: TurnEnded) -> None:
        # Events still buffered in the bridge belong before the end of the turn.
        await self._apply_events(self.bridge.drain())
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            await self.transcript.add_error(
                f"The turn failed unexpectedly: {type(error).__name__}: {error}. "
                "Your message is saved; send it again or start a /new session."
            )
            self._set_state("error")
            self.input_queue.pause()
        elif event.state == WorkerState.CANCELLED:
            self._set_state("idle")
        else:
            await self._settle(event.worker.result)
        await self._run_next_or_idle()

    async def _run_next_or_idle(self) -> None:
        """After a turn or a compaction: start the next queued input, else go idle."""
        await self.refresh_sessions()
        item = self.input_queue.pop_next()
        self._show_queue()
        if item is not None:
            # The queue runs on without an idle moment in between: busy stays set.
            await self._start_turn(item.text, item)
            return
        # Last, with no await after it: a waiter on the turn sees every row in place.
        self._turn_idle.set()
        self.refresh_bindings()
        self._refresh_liveness()

    async def _settle(self, result: Any) -> None:
        """Put every text the turn did not consume back in the user's hands (T3, T6, L4)."""
        if result.unsent and self._turn_item is not None:
            # It came from the queue: it goes back to the head of the queue (H7).
            self.input_queue.put_back(self._turn_item)
            self._show_queue()
            await self.transcript.add_notice("Your message is back in the queue.", "warning")
        elif result.unsent:
            draft = self.composer.text
            self.composer.load_text(f"{result.unsent}\n{draft}" if draft.strip() else result.unsent)
            self.composer.move_cursor(self.composer.document.end)
            await self.transcript.add_notice("Your message is back in the input.", "warning")
        if result.pending_steer:
            # Accepted but not delivered before the turn ended: behind older input, once.
            self.input_queue.push(result.pending_steer, "steer")
            await self.transcript.add_notice(
                "The turn ended before your steer reached the model: it waits in the queue."
            )
        if result.status in PAUSING_OUTCOMES or result.unsent:
            self.input_queue.pause()
            if len(self.input_queue):
                resume = self._key_for("queue.resume")
                await self.transcript.add_notice(
                    f"The queue is paused ({len(self.input_queue)} waiting): {resume} or "
                    "/queue resume runs it; sending a message also resumes it.",
                    "warning",
                )

    # -- agent events -----------------------------------------------------------------------
    async def on_agent_events(self, message: AgentEvents) -> None:
        if not self.is_running:
            return  # a late batch from the worker while the app shuts down: nothing to show
        await self._apply_events(message.events)

    async def _apply_events(self, events: list[ev.AgentEvent]) -> None:
        now = self.clock()
        for event in events:
            await self.transcript.apply(event)
            self.turn_state.apply(event, now)
            self._update_status(event)
            if isinstance(event, ev.TurnStarted):
                await self.refresh_sessions()
        self._refresh_status_for(events)
        working = self.sessions_panel.working
        if (
            self.busy
            and self.agent is not None
            and self.agent.session_id is not None
            and (working is None or working[0] != self.agent.session_id)
        ):
            # Mark the busy session now, not at the next tick (and the same on every run).
            self._refresh_liveness()
        if self.watchdog.warned:
            # Activity resumed: the banner goes now, not at the next tick.
            self._check_stall()

    def _refresh_status_for(self, events: list[ev.AgentEvent]) -> None:
        """Refresh the status panel after a batch; a batch of streamed text only moves the
        token estimate, which is redrawn at most every STATUS_STREAM_SECONDS.

        Each redraw is a frame, and Textual repaints the union of what changed in it: a
        status redraw on every batch made most frames of a stream repaint the whole screen.
        The first batch of text is drawn at once, and a skipped one when the interval ends,
        so the panel is never left behind.
        """
        if any(type(event) not in ev.STREAMED_TEXT for event in events):
            self._draw_status()
            return
        wait = self._text_drawn + STATUS_STREAM_SECONDS - time.monotonic()
        if wait <= 0:
            self._draw_streamed()
        elif self._status_behind is None:
            self._status_behind = self.set_timer(wait, self._catch_up)

    def _catch_up(self) -> None:
        self._status_behind = None  # this timer has fired: nothing left to stop
        self._draw_streamed()

    def _draw_streamed(self) -> None:
        self._text_drawn = time.monotonic()
        self._draw_status()

    def _draw_status(self) -> None:
        """Redraw the status panel now (a pending catch-up redraw is no longer needed)."""
        if self._status_behind is not None:
            self._status_behind.stop()
            self._status_behind = None
        try:
            self._refresh_status()
        except NoMatches:
            # A catch-up redraw that fires while the app shuts down finds its panels gone.
            if self.is_running:
                raise

    def _update_status(self, event: ev.AgentEvent) -> None:
        status = self.status_panel.status
        match event:
            case ev.UsageUpdated() as usage:
                status.input_tokens = usage.total_input_tokens
                status.output_tokens = usage.total_output_tokens
                status.context_used = usage.input_tokens + usage.output_tokens
                if usage.cost_usd is not None:
                    status.cost_usd = (status.cost_usd or 0.0) + usage.cost_usd
            case ev.TurnStarted():
                status.compaction, status.compacting = "", False
            case ev.CompactionStarted():
                status.compaction, status.compacting = COMPACTING.format(tokens=0), True
            case ev.CompactionProgress(summary_tokens=tokens):
                status.compaction = COMPACTING.format(tokens=tokens)
            case ev.CompactionFinished(message=message):
                status.compaction, status.compacting = message, False
            case ev.Notice(text=text) if text.startswith((NOT_SAVED, SAVING_WAITS)):
                self._not_saved_told = True
            case ev.TurnError():
                self._set_state("error")
            case ev.TurnFinished(status=outcome):
                self._set_state("idle" if outcome == "ok" else outcome)

    # -- approval (called on the worker thread) -----------------------------------------------
    def _approve(self, request: Any) -> Any:
        """Ask the user; the Verdict goes back to the agent, which remembers an "always"."""
        return self.call_from_thread(self._ask_approval, request)

    async def _ask_approval(self, request: Any) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending_approvals.add(future)
        # Through the app's queue behind the buffered events, so the tool block that asks
        # is on screen under the modal.
        self.bridge.flush()
        self.post_message(ApprovalRequested(request, future))
        try:
            return await future
        finally:
            self._pending_approvals.discard(future)
            self._set_state("working")

    async def on_approval_requested(self, message: ApprovalRequested) -> None:
        # Not on the start-up path.
        from agent.tools.approvals import Verdict
        from hermes_tui.screens.approval import APPROVAL_ARM_SECONDS, ApprovalScreen

        future = message.future

        def answered(verdict: Verdict | None) -> None:
            if not future.done():
                future.set_result(verdict or Verdict(False))

        self._set_state("waiting for approval", message.request.tool)
        arm_seconds = self.approval_arm_seconds
        screen = ApprovalScreen(
            message.request,
            arm_seconds=APPROVAL_ARM_SECONDS if arm_seconds is None else arm_seconds,
            clock=self.approval_clock,
            composer=self.composer,
        )
        await self.push_screen(screen, callback=answered)

    # -- slash commands -------------------------------------------------------------------------
    async def run_command(self, text: str) -> None:
        """Dispatch a slash command from the table; unknown ones are reported, never sent."""
        from storage.errors import StorageError, sentence  # loaded with the agent by now

        parsed = commands.parse(text)
        if parsed.command is None:
            await self.transcript.add_notice(
                f"Unknown command /{parsed.name}: /help lists the commands.", "error"
            )
            return
        try:
            await getattr(self, parsed.command.handler)(parsed.argument)
        except StorageError as exc:
            await self.transcript.add_notice(sentence(exc), "error")

    async def command_steer(self, argument: str) -> None:
        """Send text into the running turn (queued if no turn takes it); never run as a command."""
        if not argument:
            await self.transcript.add_notice("Usage: /steer <text>.", "error")
            return
        await self.send(argument, "steer")

    async def command_redirect(self, argument: str) -> None:
        """Interrupt the model's current answer and re-run it with a correction (T5)."""
        if not argument:
            await self.transcript.add_notice("Usage: /redirect <text>.", "error")
            return
        await self.send(argument, "interrupt")

    async def command_stop(self, _argument: str = "") -> None:
        """Stop the running turn; queued input stays, paused."""
        self.action_stop()

    async def command_queue(self, argument: str) -> None:
        """`/queue <text>` queues; `/queue rm N`, `/queue edit N`, `/queue resume` act on it."""
        verb, _, rest = argument.partition(" ")
        items = self.input_queue.items
        if verb in ("rm", "edit") and rest.strip().isdigit():
            position = int(rest)
            if not 1 <= position <= len(items):
                await self.transcript.add_notice(
                    f"No queued item {position}: the queue has {len(items)}.", "error"
                )
            elif verb == "rm":
                self._remove_queued(items[position - 1].id)
            else:
                self._edit_queued(items[position - 1].id)
            return
        if argument == "resume":
            await self.action_resume_queue()
            return
        if not argument:
            focus = self._key_for("queue.focus")
            await self.transcript.add_notice(
                f"{len(items)} queued. /queue <text> adds, /queue rm N removes, /queue edit N "
                f"puts one back in the input, /queue resume runs a paused queue; {focus} "
                "selects one (delete removes, e edits)."
            )
            return
        self.input_queue.push(argument)
        self._show_queue()
        if not self.busy:
            await self._run_next()

    async def _run_next(self) -> None:
        """Start the oldest queued item when no turn runs and the queue is not paused."""
        if self.busy:
            return
        item = self.input_queue.pop_next()
        self._show_queue()
        if item is not None:
            await self._start_turn(item.text, item)

    def _show_queue(self) -> None:
        queue = self.input_queue
        self.status_panel.queue_view.show(
            queue.items,
            paused=queue.paused,
            focus_key=self._key_for("queue.focus"),
            resume_key=self._key_for("queue.resume"),
        )
        self.refresh_bindings()

    def _remove_queued(self, item_id: int) -> None:
        self.input_queue.remove(item_id)
        self._show_queue()
        if not len(self.input_queue):
            self.composer.focus()

    def _edit_queued(self, item_id: int) -> None:
        """Take a queued item out and into the composer, after any draft there (never lost)."""
        item = self.input_queue.remove(item_id)
        if item is None:
            return
        draft = self.composer.text
        self.composer.load_text(f"{draft.rstrip()}\n{item.text}" if draft.strip() else item.text)
        self.composer.move_cursor(self.composer.document.end)
        self._show_queue()
        self.composer.focus()

    def on_queue_list_remove(self, message: QueueList.Remove) -> None:
        self._remove_queued(message.item_id)

    def on_queue_list_edit(self, message: QueueList.Edit) -> None:
        self._edit_queued(message.item_id)

    async def _refuse_while_busy(self, what: str) -> bool:
        if self.busy:
            await self.transcript.add_notice(
                f"The agent is working: press escape to stop it before you {what}.", "warning"
            )
        return self.busy

    async def command_compact(self, argument: str) -> None:
        """Summarise the middle of the conversation for the model now (C1); the rows stay here.

        It runs like a turn: input typed meanwhile is queued, escape cancels it.
        """
        if self.busy:
            await self.transcript.add_notice(COMPACT_BUSY, "warning")
            return
        if self.agent.session_id is None:
            await self.transcript.add_notice("Nothing to compact yet: send a message first.")
            return
        self._turn_idle.clear()
        self.turn_state.apply(ev.TurnStarted("", ""), self.clock())
        # Like a sent message: the outcome shows at the bottom, so follow it.
        self.transcript.anchor()
        self._set_state("compacting")
        self.refresh_bindings()
        self._run_compaction(argument or None)

    @work(thread=True, exclusive=True, exit_on_error=False, group="compact")
    def _run_compaction(self, focus: str | None) -> Any:
        return self.agent.compact(focus)

    async def on_compaction_ended(self, event: CompactionEnded) -> None:
        await self._apply_events(self.bridge.drain())
        result = event.worker.result if event.state == WorkerState.SUCCESS else None
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            await self.transcript.add_error(
                f"Compaction failed unexpectedly: {type(error).__name__}: {error}. "
                "Nothing was dropped."
            )
        elif result is not None and result.reason == "busy":
            await self.transcript.add_notice(result.message or COMPACT_BUSY, "warning")
        elif result is not None and result.ok:
            self.status_panel.status.context_used = result.tokens_after
        self._set_state("idle")
        await self._run_next_or_idle()

    async def command_new(self, _argument: str = "") -> None:
        """Start a fresh session."""
        if await self._refuse_while_busy("start a new session"):
            return
        self.agent.new_session()
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
        await self.transcript.open_history(self.transcript.history)
        status = self.status_panel.status
        status.input_tokens = session.get("input_tokens") or 0
        status.output_tokens = session.get("output_tokens") or 0
        status.cost_usd = session.get("estimated_cost_usd")
        status.context_used = 0
        self._show_model()
        self._set_state("idle")
        await self.refresh_sessions()
        self.composer.focus()
        if self.agent.interrupted:
            await self.transcript.add_notice(
                "This session's last turn did not finish (hermes-tui stopped mid-turn): "
                "/continue picks it up where it stopped.",
                "warning",
            )

    async def command_continue(self, _argument: str = "") -> None:
        """Continue a turn the last run left unfinished, with a typed recovery note (D4)."""
        if await self._refuse_while_busy("continue"):
            return
        if not self.agent.interrupted:
            await self.transcript.add_notice("Nothing to continue: the last turn finished.")
            return
        self._turn_idle.clear()
        self.turn_state.apply(ev.TurnStarted("", ""), self.clock())
        await self.transcript.add(RecoveryNote())
        self.transcript.anchor()
        self._set_state("working")
        self.refresh_bindings()
        self._continue_turn()

    @work(thread=True, exclusive=True, exit_on_error=False, group="turn")
    def _continue_turn(self) -> Any:
        return self.agent.continue_interrupted()

    async def on_sessions_panel_selected(self, message: SessionsPanel.Selected) -> None:
        from storage.errors import StorageError, sentence

        try:
            await self.resume_session(message.session_id)
        except StorageError as exc:
            await self.transcript.add_notice(sentence(exc), "error")

    def on_sessions_panel_search(self, message: SessionsPanel.Search) -> None:
        # Exclusive: a newer query cancels the older search.
        self.run_worker(
            self._search_sessions(message.query),
            group="search",
            exclusive=True,
            exit_on_error=False,
        )

    async def _search_sessions(self, query: str) -> None:
        """Every session's messages matching `query`, newest first, into the sessions panel."""
        await self._agent_ready.wait()
        try:
            hits = await self.db.search(query, limit=SEARCH_LIMIT)
        except Exception as exc:
            self.sessions_panel.show_hits(query, [], error=f"search failed: {exc}")
            return
        self.sessions_panel.show_hits(query, hits)

    async def action_search_sessions(self) -> None:
        """Show the sessions panel and focus its search box."""
        self.show_sessions = True
        self._apply_panel_visibility()
        await self.sessions_panel.open_search()

    def _on_write_error(self, reason: str) -> None:
        """A database write failed (on the app loop); a turn reports it itself (S7).

        A held lock loses nothing (the writes wait and are retried): said as such (H7).
        """
        from storage.errors import StorageLockedError, lock_wait_notice

        if self._not_saved_told or self.busy:
            return
        self._not_saved_told = True
        if reason == str(StorageLockedError(self.db.path)):
            self.call_later(self.transcript.add_notice, lock_wait_notice(self.db.path), "warning")
            return
        self.call_later(self.transcript.add_notice, f"{NOT_SAVED}: {reason}", "error")

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
        from hermes_tui.screens.help import HelpScreen  # not on the start-up path

        await self.push_screen(HelpScreen(self.key_help()))

    async def command_quit(self, _argument: str = "") -> None:
        """Quit."""
        await self.action_quit()

    async def command_theme(self, argument: str) -> None:
        """Show the themes, or switch to one (remembered in config.yaml)."""
        names = sorted(self.available_themes)
        if not argument:
            await self.transcript.add_notice(
                f"Theme: {self.theme}. Themes: {', '.join(names)}. "
                "Switch with /theme <name> or the command palette (ctrl+p)."
            )
            return
        if argument not in names:
            await self.transcript.add_notice(
                f"No theme called {argument!r}; themes: {', '.join(names)}.", "error"
            )
            return
        self.theme = argument
        if self._remember_theme(self.current_theme):
            await self.transcript.add_notice(
                f"Theme set to {argument} (saved in {self.config.config_path})."
            )

    def _install_themes(self, catalog: theming.ThemeCatalog) -> list[str]:
        """Make our themes the only ones and apply the configured one; returns notices."""
        notices = [problem.message for problem in catalog.problems]
        for theme in catalog.themes.values():
            self.register_theme(theme)
        wanted = self.config.ui.theme
        if wanted not in catalog.themes:
            fallback = theming.DEFAULT_THEME
            notices.append(
                f"Theme {wanted!r} (ui.theme in {self.config.config_path}) is not installed; "
                f"using {fallback}. /theme lists the themes."
            )
            wanted = fallback if fallback in catalog.themes else self.theme
        self._set_first_theme(wanted)
        for name in list(self.available_themes):
            if name not in catalog.themes and name != wanted:
                self.unregister_theme(name)
        self._saved_theme = self.config.ui.theme
        return notices

    def _set_first_theme(self, name: str) -> None:
        """Start in `name`, doing what setting `theme` does but for the CSS refresh it queues.

        The stylesheet is not parsed yet, so giving it this theme's variables now is enough.
        Setting `theme` instead would queue a refresh that parses all the CSS a second time
        and restyles every widget before the first frame (a fifth of the time to it).
        """
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        for old in [c for c in self.classes if c.startswith("-theme-")]:
            self.remove_class(old, update=False)
        self.add_class(f"-theme-{name}", update=False)
        self.set_class(dark, "-dark-mode", update=False)
        self.set_class(not dark, "-light-mode", update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Our transcript colours for a theme that does not set them."""
        theme = self.current_theme
        return {} if theming.sets_own_colours(theme) else theming.derived_variables(theme)

    def _remember_theme(self, theme: Theme) -> bool:
        """Save a newly chosen theme (from /theme or the palette) as `ui.theme`."""
        if theme.name == self._saved_theme:
            return True
        try:
            save_ui_theme(self.config.home, theme.name)
        except (OSError, ConfigError) as exc:
            # The reason names a path: shown as text, never as markup.
            reason = safe_text(str(exc))
            self.notify(f"The theme could not be saved: {reason}", severity="warning", markup=False)
            return False
        self._saved_theme = theme.name
        return True

    def _key_for(self, binding_id: str) -> str:
        """The first key bound to `binding_id` as the footer shows it (after remapping)."""
        binding = next(b for b in KEY_BINDINGS if b.id == binding_id)
        key = self._keymap.get(binding_id, binding.key).split(",")[0].strip()
        return self.get_key_display(Binding(key, ""))

    def key_help(self) -> list[tuple[str, str]]:
        """(keys, description) for every app binding, as currently mapped."""
        rows = []
        for binding in KEY_BINDINGS:
            keys = self._keymap.get(binding.id or "", binding.key).split(",")
            shown = ", ".join(self.get_key_display(Binding(key.strip(), "")) for key in keys)
            rows.append((shown, binding.description))
        return rows

    # -- actions -----------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Queue and steer keys show in the footer only while they can act."""
        if action == "steer_composer":
            return self.busy
        if action == "focus_queue":
            return bool(len(self.input_queue))
        if action == "resume_queue":
            return self.input_queue.paused and bool(len(self.input_queue))
        return True

    def action_stop(self) -> None:
        """Stop the running turn."""
        if self.busy and self.agent is not None:
            self.agent.stop()

    def action_steer_composer(self) -> None:
        """Send the composer's text into the running turn as a steer, as text (T2, T4)."""
        # After the characters still queued for the composer (see Composer.action_submit).
        self.composer.call_later(self._steer_composer_text)

    async def _steer_composer_text(self) -> None:
        text = self.composer.text
        if not text.strip():
            return
        self.composer.remember(text)
        await self.send(text, "steer")

    def action_focus_queue(self) -> None:
        """Focus the queued items (delete removes one, e puts it back in the input)."""
        self.show_status = True
        self._apply_panel_visibility()
        self.status_panel.queue_view.list.focus()

    async def action_resume_queue(self) -> None:
        """Let a paused queue run again."""
        self.input_queue.resume()
        self._show_queue()
        await self._run_next()

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

    def action_focus_transcript(self) -> None:
        """Focus the transcript (arrow keys and page keys scroll it)."""
        self.transcript.focus()

    def action_copy(self) -> None:
        """Copy the code block under the mouse, else the selected or last answer (OSC 52)."""
        transcript = self.transcript
        clip = clip_for(self.mouse_over, transcript.selected, list(transcript.children))
        if clip is None:
            self.notify("Nothing to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(clip.text)
        lines = clip.text.count("\n") + 1
        self.notify(f"Copied the {clip.what} ({lines} line{'s' if lines > 1 else ''}).")

    def action_jump(self, step: int) -> None:
        """Select the previous or next message in the transcript."""
        self.transcript.jump(step)

    def action_page(self, step: int) -> None:
        """Scroll the transcript by a page."""
        if step < 0:
            self.transcript.page_up()
        else:
            self.transcript.page_down()


def _quote(text: str, width: int = 60) -> str:
    """`text` on one line, cut to `width`, in quotes."""
    line = " ".join(text.split())
    return f"“{line[: width - 1]}…”" if len(line) > width else f"“{line}”"


def run_tui(
    config: Config, *, workspace: Path | str | None = None, resume: str | None = None
) -> int:
    """Run the full-screen app until the user quits; `resume` opens a stored session first."""
    app = HermesApp(config, workspace=workspace, resume=resume)
    result = app.run()
    for note in app.exit_notes:
        print(f"hermes-tui: {note}", file=sys.stderr)
    if app.exit_notes:
        return 1
    return result if isinstance(result, int) else (app.return_code or 0)
