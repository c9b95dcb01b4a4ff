"""HermesApp: the layout, start-up and shutdown, and the wiring between the app's parts.

Each concern has a module of its own (see docs/modules.md); they reach each other here.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.worker import Worker

from agent.config import Config
from hermes_tui import startup_gc, terminal_keys, textual_compat, theming
from hermes_tui.actions import KeyActions
from hermes_tui.approval import ApprovalFlow
from hermes_tui.bridge import AgentEvents, Bridge, unless_shut_down
from hermes_tui.doors import started
from hermes_tui.gc_pacing import IDLE_DELAY, GcPacing
from hermes_tui.keys import KEY_BINDINGS, KeyMap
from hermes_tui.layout import ScreenLayout
from hermes_tui.modes import ModeController
from hermes_tui.notify import Notifier
from hermes_tui.presenter import EventRouter
from hermes_tui.probes import Probes, probe
from hermes_tui.sending import SendLine
from hermes_tui.sessions import SessionsController
from hermes_tui.status import StatusPresenter
from hermes_tui.turns import TurnController, WorkEnded
from hermes_tui.ui_config import key_remaps, ui_settings
from hermes_tui.ui_state import UIState
from hermes_tui.widgets.centre import Centre
from hermes_tui.widgets.completion import CompletionPopup
from hermes_tui.widgets.composer import Composer
from hermes_tui.widgets.key_bar import KeyBar
from hermes_tui.widgets.new_below import NewBelowLine
from hermes_tui.widgets.queue_view import QueueList
from hermes_tui.widgets.sessions_panel import SessionsPanel
from hermes_tui.widgets.stall_banner import StallBanner
from hermes_tui.widgets.status_line import StatusLine
from hermes_tui.widgets.status_panel import StatusPanel
from hermes_tui.widgets.transcript import Transcript
from hermes_tui.widgets.working_line import WorkingLine

if TYPE_CHECKING:
    from agent.inbox import InputQueue
    from agent.loop import Agent
    from hermes_tui.changes import ChangesController
    from hermes_tui.commands.registry import CommandTable
    from hermes_tui.completion.controller import CompletionController
    from hermes_tui.runtime import Runtime
    from storage.db import SessionDB

BENCH_FIRST_FRAME_ENV = "HERMES_TUI_BENCH_FIRST_FRAME"
"""Set (by bench/startup.py) to make the app exit right after its first frame is painted."""


class HermesApp(KeyActions, App[int]):
    """The full-screen app: sessions | transcript | status, composer and footer."""

    CSS_PATH = "app.tcss"
    TITLE = "hermes-tui"
    # Textual declares BINDINGS a list of Binding | tuple, and a list is invariant: ours, all
    # Binding, is one such list all the same.
    BINDINGS = KEY_BINDINGS  # type: ignore[assignment]

    def __init__(
        self,
        config: Config,
        *,
        workspace: Path | str | None = None,
        resume: str | None = None,
        probes: Probes | None = None,
    ) -> None:
        super().__init__()
        textual_compat.reflow_from_the_last_map()  # a bubble's frame arranges the screen once
        textual_compat.partial_updates_render_what_changed()  # a spinner frame renders the spinner
        textual_compat.styles_caches_die_with_their_widgets()  # not pinned by an lru_cache
        self.config = config
        self.ui_settings = ui_settings(config)  # `ui:` and `keys:` are the front end's to check
        self.probes = probes or Probes()
        self.resume_ref = resume
        self.workspace = Path(workspace or Path.cwd()).resolve()
        # None until the start after the first frame has opened the store and built the agent.
        self.runtime: Runtime | None = None
        self.preloading: threading.Thread | None = None
        """The thread importing what the first turn needs (preload.py), once the app is up."""
        self.asking_ahead: threading.Thread | None = None
        """The thread asking the model's server ahead of the first turn (preload.py)."""
        self.db: SessionDB | None = None
        self.agent: Agent | None = None
        self.bridge = Bridge(self)
        self.layout = ScreenLayout(self, UIState(config.home))
        terminal_keys.install()
        # The newline key the key bar shows is one this terminal can send (the user's wins).
        newline = {"composer.newline": terminal_keys.newline_keys()}
        remap = {**newline, **key_remaps(config)}
        self.set_keymap(remap)
        self.keys = KeyMap(self, remap)
        self.turns = TurnController(self)
        self.sending = SendLine(self)
        self.status = StatusPresenter(self)
        self.approval = ApprovalFlow(self)
        self.modes = ModeController(self)
        self.notifier = Notifier(self, lambda data: self._terminal_write(data))
        self.sessions = SessionsController(self)
        # A resume builds with the collector off; one collection follows at idle (Z2).
        self.gc_pacing = GcPacing(
            self.set_timer,
            lambda: self.transcript.filling,
            delay=lambda: float(probe(self, "gc_idle_delay", IDLE_DELAY)),
        )
        self.themes = theming.AppThemes(self, settings=self)
        self.theme_notices = self.themes.install(theming.load_themes(config.home))
        self.router: EventRouter | None = None
        self._agent_up = asyncio.Event()
        self._froze_heap = False
        self._quitting = False  # a quit is waiting for queued writes (a second quit: now)
        self.exit_notes: list[str] = []  # sentences for the terminal once the app has gone
        self.stopped_background: str | None = None  # which background processes quitting ended

    # The parts a first frame does not need are built on first use, after it (SPEC Z2): the
    # command table, the completion (the file index, rapidfuzz) and /undo's controller.
    @cached_property
    def command_table(self) -> CommandTable:
        """The slash commands: the built-ins, then each command source."""
        from hermes_tui import commands

        return commands.table_for(self)

    @cached_property
    def completion(self) -> CompletionController:
        """The composer's completion (`/` commands, `@` paths, /model arguments)."""
        from hermes_tui.completion.controller import CompletionController

        return CompletionController(self)

    @cached_property
    def changes(self) -> ChangesController:
        """/undo, /rewind and the diff of a turn's changes."""
        from hermes_tui.changes import ChangesController

        return ChangesController(self)

    # -- layout -----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield SessionsPanel(id="sessions")
            with Centre(id="centre"):
                yield Transcript(id="transcript", show_reasoning=self.ui_settings.show_reasoning)
                yield WorkingLine(id="working")
                yield NewBelowLine(id="new-below")
                yield StallBanner(id="stall")
                yield CompletionPopup(id="hints")
                yield StatusLine(id="status-line")
                yield Composer(
                    id="composer",
                    cursor_blink=self.probes.cursor_blink,
                    blink_rest=self.probes.blink_rest,
                )
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

    @property
    def stall_banner(self) -> StallBanner:
        """The stall banner above the composer."""
        return self.query_one(StallBanner)

    @property
    def working_line(self) -> WorkingLine:
        """The spinner under the transcript while agent work runs."""
        return self.query_one(WorkingLine)

    @property
    def status_line(self) -> StatusLine:
        """The one-line status shown while the status panel is hidden."""
        return self.query_one(StatusLine)

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: the new one (the app's own may not have caught up yet).
        self.layout.fit(event.size.width)

    def show_panel(self, name: str, shown: bool = True) -> None:
        """Show (or hide) panel `name` (sessions | status) until the next resize."""
        self.layout.show(name, shown)

    # -- start-up and shutdown --------------------------------------------------------------
    def on_mount(self) -> None:
        self.composer.focus()
        self.layout.fit(self.size.width)
        self.query_one(Centre).follow_key = self.keys.shown("transcript.follow")
        self.themes.attach()  # remembers a switch; fits a 256-colour terminal
        # One route per event type: the transcript, the status, the panel (the completion
        # joins after the first frame, before the agent can send anything).
        parts = (self.transcript.live, self.status, self.sessions, self.notifier)
        self.router = EventRouter(*parts, after=self.status.after_batch)
        if os.environ.get(BENCH_FIRST_FRAME_ENV):
            self.call_after_refresh(self.exit)
            return
        # The database, the agent and their imports come after the first frame is painted.
        self.call_after_refresh(self.run_worker, self._start, group="startup")

    async def _start(self) -> None:
        from hermes_tui.preload import preload_first_turn
        from hermes_tui.runtime import Runtime
        from hermes_tui.startup import greet
        from storage.errors import StorageError, sentence

        self.composer.completer = self.completion
        self.composer.image_paster = self.pasted_images
        started(self.router, "event router").join(self.completion)  # made on mount
        try:
            runtime = await Runtime.start(
                self.config,
                self.bridge,
                self.approval.approve,
                workspace=self.workspace,
                demo_delay=self.probes.demo_delay,
            )
        except StorageError as exc:
            # Nothing works without the database: leave with its one sentence (H7).
            self.exit_notes.append(sentence(exc))
            self.exit(return_code=1)
            return
        self.runtime = runtime
        self.config, self.db, self.agent = runtime.config, runtime.db, runtime.agent
        await greet(self)
        # Everything built so far (Textual, the SDKs, our modules) lives as long as the app:
        # moved out of the collector's generations, it is not rescanned by every full
        # collection while a long answer streams and mounts hundreds of Markdown blocks.
        # Collect first so no garbage is pinned; on_unmount hands it all back.
        if self.probes.collect_before_freeze:
            gc.collect()
        gc.freeze()
        self._froze_heap = True
        startup_gc.release()  # paused by the command line until now
        self._agent_up.set()
        self.preloading, self.asking_ahead = preload_first_turn(runtime.agent)

    async def ready(self) -> None:
        """Wait until the store and the agent are up (after the first frame)."""
        await self._agent_up.wait()

    async def on_unmount(self) -> None:
        startup_gc.release_unused()  # an app that never came up (an error, the first-frame bench)
        self.gc_pacing.release()
        if self._froze_heap:
            gc.unfreeze()
        self.approval.decline_all()
        if "completion" in self.__dict__:  # built after the first frame, if the app got there
            self.completion.close()
        if self.runtime is not None:
            # A quit that already waited for a held lock does not wait again (H7).
            not_saved = await self.runtime.close(wait=0.0 if self._quitting else None)
            if not_saved is not None:
                self.exit_notes.append(not_saved)
            self.stopped_background = self.runtime.stopped_background

    def write_failed(self, reason: str) -> None:
        """A database write failed (on the app loop); a turn reports it itself (S7, H7)."""
        if not self.turns.busy:
            started(self.agent, "agent").check_saving(reason)

    # -- what the rest of the app and the tests call ------------------------------------------
    @property
    def busy(self) -> bool:
        """True while agent work runs or a sent line waits to run (from Enter until the
        work's last event is shown)."""
        return self.turns.busy or self.sending.pending

    @property
    def input_queue(self) -> InputQueue:
        """The input typed while the agent works (T1)."""
        return self.turns.queue

    async def submit(self, text: str) -> Worker[Any] | None:
        """Run a slash command, or send `text` as Enter does; returns a new turn's worker."""
        from hermes_tui import commands

        await self.ready()
        if commands.is_command(text):
            await self.run_command(text)
            return None
        return await self.send(text, self.config.agent.busy_input_mode)

    async def send(self, text: str, mode: str) -> Worker[Any] | None:
        """Start a turn when idle; during one, queue, steer or redirect the text (T1)."""
        await self.ready()
        return await self.turns.send(text, mode)

    async def run_command(self, text: str) -> None:
        """Dispatch a slash command line; its reply shows where the user typed it."""
        from hermes_tui import commands

        self.transcript.anchor()
        await commands.run(self, text)

    async def wait_for_turn(self, timeout: float = 30.0) -> None:
        """Wait until every sent line has run and no turn runs (queued input that runs on
        counts as the same wait)."""
        async with asyncio.timeout(timeout):
            while self.busy:
                await self.sending.wait_drained()
                await self.turns.wait_idle(timeout)

    async def resume_session(self, session_id: str) -> None:
        """Show exactly what was persisted for `session_id` and continue it (D3)."""
        await self.sessions.resume(session_id)

    async def refresh_sessions(self) -> None:
        """Reload the sessions panel from the database."""
        await self.sessions.refresh()

    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        """Open `url` only when it is an http, https or mailto link; say why any other is not
        (a link in an answer is the model's: links.py)."""
        from hermes_tui.links import refusal

        refused = refusal(url)
        if refused is not None:
            self.notify(refused, severity="warning", markup=False)
            return
        super().open_url(url, new_tab=new_tab)

    async def notice(self, text: str, level: str = "info") -> None:
        """A one-line notice in the transcript."""
        await self.transcript.add_notice(text, level)

    async def show_help(self) -> None:
        """Show commands and keys."""
        from hermes_tui.screens.help import HelpScreen, sandbox_help  # not on the start-up path

        sandbox = sandbox_help(self.agent.sandbox, self.config.app_homes) if self.agent else ""
        await self.push_screen(
            HelpScreen(self.keys.help_table(), self.command_table.entries(), sandbox=sandbox)
        )

    def _terminal_write(self, data: str) -> None:
        """A bell or a notification: to the test's probe when it has one, else the terminal."""
        if self.probes.terminal_write is not None:
            self.probes.terminal_write(data)
            return
        from hermes_tui.textual_compat import write_to_terminal

        write_to_terminal(self, data)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Our transcript colours for a theme that does not set them."""
        return theming.variable_defaults(self.current_theme)

    # -- messages -----------------------------------------------------------------------------
    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        text = message.text  # already out of the composer: typing goes on meanwhile (Z1)

        async def send(stopped: bool) -> None:
            from hermes_tui import commands

            if stopped and not commands.is_command(text):
                # Esc came after this Enter, before its turn: it waits, as a stop's queue does.
                self.turns.hold(text)
                return
            await self.submit(text)

        self.sending.enter(send)

    async def on_agent_events(self, message: AgentEvents) -> None:
        if not self.is_running or self.router is None:
            return  # a late batch from the worker while the app shuts down: nothing to show
        self.gc_pacing.bound()  # a long turn's garbage stays bounded while it is held
        await unless_shut_down(self, self.router.apply(message.events))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.turns.worker_changed(event)

    def on_work_ended(self, message: WorkEnded) -> None:
        # In line with what Enter sends, and off the key path: the next queued turn's send
        # (its message shown) must not hold Esc back either (Z1).
        self.sending.enter(lambda _stopped: unless_shut_down(self, self.turns.ended(message)))

    def on_queue_list_remove(self, message: QueueList.Remove) -> None:
        self.turns.remove_queued(message.item_id)

    def on_queue_list_edit(self, message: QueueList.Edit) -> None:
        self.turns.edit_queued(message.item_id)

    def on_sessions_panel_resize_asked(self, message: SessionsPanel.ResizeAsked) -> None:
        self.layout.resize_sessions(message.direction)

    def on_sessions_panel_selected(self, message: SessionsPanel.Selected) -> None:
        # In line with what Enter sends: a message sent after the pick goes to that session.
        self.sending.enter(lambda _stopped: self.sessions.resume_picked(message.session_id))

    def on_sessions_panel_older_asked(self, _message: SessionsPanel.OlderAsked) -> None:
        self.run_worker(self.sessions.load_older(), group="sessions", exit_on_error=False)

    def on_sessions_panel_search(self, message: SessionsPanel.Search) -> None:
        self.sessions.search(message.query)


if TYPE_CHECKING:
    from hermes_tui.actions import KeysHost

    def _keys_door(app: HermesApp) -> KeysHost:
        """HermesApp is the door its key actions are typed on: mypy proves it here."""
        return app
