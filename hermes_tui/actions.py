"""What the keys in the binding table do: the `action_*` methods Textual calls on the app."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from hermes_tui.clipboard import clip_for
from hermes_tui.doors import Notices, RunsWorkers, store_of

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.worker import Worker

    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.changes import ChangesController
    from hermes_tui.keys import KeyMap
    from hermes_tui.modes import ModeController
    from hermes_tui.probes import Probes
    from hermes_tui.sessions import SessionsController
    from hermes_tui.turns import TurnController
    from hermes_tui.widgets.composer import Composer
    from hermes_tui.widgets.sessions_panel import SessionsPanel
    from hermes_tui.widgets.status_panel import StatusPanel
    from hermes_tui.widgets.transcript import Transcript
    from storage.db import SessionDB


QUIT_AGAIN_SECONDS = 2.0
"""ctrl+c on an idle, empty composer quits when pressed again within this time."""
QUIT_CONFIRM_SECONDS = 5.0
"""With background processes running, the quit key quits when pressed again within this
time (G2): the first press says which processes quitting stops."""


class KeysHost(Notices, RunsWorkers, Protocol):
    """What the key actions use of the app (their door; HermesApp is one, app.py proves it):
    its parts and panels, Textual's services, and the actions' own state and helpers."""

    config: Config
    agent: Agent | None
    db: SessionDB | None
    probes: Probes
    keys: KeyMap
    turns: TurnController
    modes: ModeController
    sessions: SessionsController
    workspace: Path
    mouse_over: Widget | None
    _quitting: bool
    _quit_armed_at: float | None
    _quit_confirm_at: float | None

    @property
    def changes(self) -> ChangesController:
        """/undo, /rewind and the Esc-Esc picker."""
        ...

    @property
    def busy(self) -> bool:
        """True while agent work runs or a sent line waits to run."""
        ...

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        ...

    @property
    def status_panel(self) -> StatusPanel:
        """The status panel widget."""
        ...

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel widget."""
        ...

    @property
    def screen(self) -> Screen[object]:
        """The screen on top (a dialog, /help, or the main one)."""
        ...

    @property
    def screen_stack(self) -> list[Screen[Any]]:
        """The screens shown, the main one first."""
        ...

    def show_panel(self, name: str, shown: bool = True) -> None:
        """Show or hide a side panel ("sessions" or "status")."""
        ...

    async def send(self, text: str, mode: str) -> Worker[Any] | None:
        """Send `text` to the agent as `mode` (steer, queue, interrupt...)."""
        ...

    async def run_command(self, text: str) -> None:
        """Run a slash command line."""
        ...

    async def show_help(self) -> None:
        """Open the help screen."""
        ...

    def notify(
        self,
        message: str,
        *,
        severity: SeverityLevel = "information",  # noqa: V107
        timeout: float | None = None,
    ) -> None:
        """A toast (Textual's)."""
        ...

    def exit(self, result: int | None = None) -> None:
        """End the app with `result` as its exit code."""
        ...

    def copy_to_clipboard(self, text: str) -> None:
        """Put `text` on the terminal's clipboard (OSC 52)."""
        ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:  # noqa: V107
        """Run `callback` on the app's loop; block this (other) thread for its result."""
        ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:  # noqa: V107
        """Run `callback` on the app's loop after the messages already queued."""
        ...

    # The actions' own helpers, reached through the door as the actions themselves are.
    def _background_warning(self) -> str | None: ...
    async def quit_now(self) -> None:
        """Quit, after a bounded wait for queued writes."""
        ...

    async def _save_then_exit(self) -> None: ...
    async def _steer_composer_text(self) -> None: ...
    def _paste_clipboard_image(self) -> None: ...


class KeyActions:
    """The app's key actions (mixed into HermesApp); each hands over to the part that acts.

    Each method is typed on the app's door (`self: KeysHost`, a Protocol, as mypy allows a
    mixin's self to be): the mixin is only ever HermesApp, which app.py proves is one.
    """

    _quit_armed_at: float | None = None
    _quit_confirm_at: float | None = None

    def check_action(self: KeysHost, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Queue and steer keys show in the footer only while they can act."""
        queue = self.turns.queue
        if action == "steer_composer":
            return self.turns.busy
        if action == "focus_queue":
            return bool(len(queue))
        if action == "resume_queue":
            return queue.paused and bool(len(queue))
        if action == "cycle_mode":
            # Over a dialog, shift+Tab moves between its buttons as usual.
            return len(self.screen_stack) == 1
        return True

    async def action_quit(self: KeysHost) -> None:
        """Quit; with background processes running, only when asked twice (G2)."""
        if not self._quitting and self._background_warning() is not None:
            now = self.probes.clock()
            armed = self._quit_confirm_at
            if armed is None or now - armed > QUIT_CONFIRM_SECONDS:
                self._quit_confirm_at = now
                warning = self._background_warning()
                await self.notice(
                    f"{warning}: {self.keys.shown('app.quit')} again quits.", "warning"
                )
                return
        await self.quit_now()

    def _background_warning(self: KeysHost) -> str | None:
        """`2 background processes will be stopped: bg1 (...), ...`, or None with none."""
        from agent import background

        return background.will_stop_sentence(background.BACKGROUND.running())

    async def quit_now(self: KeysHost) -> None:
        """Quit; writes that another process's lock holds up get a bounded wait first (H7).

        The wait says what it waits for; quitting again leaves at once.
        """
        if self._quitting or self.db is None or self.db.idle:
            self.exit(0)
            return
        self._quitting = True
        self.run_worker(self._save_then_exit(), group="exit", exclusive=True, exit_on_error=False)

    async def _save_then_exit(self: KeysHost) -> None:
        from storage.errors import sentence

        quit_key = self.keys.shown("app.quit")

        def tell(waiting: str) -> None:
            notice = f"{sentence(waiting)[:-1]}: {quit_key} again quits now."
            self.call_later(self.notice, notice, "warning")

        try:
            await store_of(self).wait_saved(self.config.storage.exit_wait_seconds, on_wait=tell)
        finally:
            self.exit(0)

    def action_stop(self: KeysHost) -> None:
        """Stop the running turn, or the one being sent (Z1); with none, Esc twice on an
        empty composer opens the rewind picker (an Esc that stops never counts towards it)."""
        if self.busy:
            self.turns.stop()
        self.changes.escape_pressed(time.monotonic())

    async def action_interrupt(self: KeysHost) -> None:
        """ctrl+c: stop the running turn or the one being sent; else copy a selection or
        clear the composer (its text stays in the history: Up brings it back); else, pressed
        twice, quit."""
        if self.busy:
            self.turns.stop()
            return
        composer = self.composer
        if composer.has_focus and composer.selected_text:
            composer.action_copy()
            return
        if composer.text:
            composer.remember(composer.text)
            return
        now = self.probes.clock()
        if self._quit_armed_at is not None and now - self._quit_armed_at <= QUIT_AGAIN_SECONDS:
            await self.quit_now()  # the first press said what quitting stops
            return
        self._quit_armed_at = now
        again, quit_key = self.keys.shown("app.interrupt"), self.keys.shown("app.quit")
        warning = self._background_warning()
        stops = f": {warning}" if warning else ""
        self.notify(f"Press {again} again to quit{stops} ({quit_key} quits too).", timeout=2)

    def action_steer_composer(self: KeysHost) -> None:
        """Send the composer's text into the running turn as a steer, as text (T2, T4)."""
        # After the characters still queued for the composer (see Composer.action_submit).
        self.composer.call_later(self._steer_composer_text)

    async def _steer_composer_text(self: KeysHost) -> None:
        text = self.composer.text
        if not text.strip():
            return
        self.composer.remember(text)
        await self.send(text, "steer")

    def action_focus_queue(self: KeysHost) -> None:
        """Focus the queued items (delete removes one, e puts it back in the input)."""
        self.show_panel("status")
        self.status_panel.queue_view.list.focus()

    async def action_resume_queue(self: KeysHost) -> None:
        """Let a paused queue run again."""
        await self.turns.resume_queue()

    async def action_cycle_mode(self: KeysHost) -> None:
        """Step the approval mode: ask, auto-edit, plan (N1)."""
        if self.agent is not None:  # before it is up there is no mode to switch yet
            await self.modes.cycle()

    async def action_new_session(self: KeysHost) -> None:
        """Start a new session."""
        await self.run_command("/new")

    async def action_help(self: KeysHost) -> None:
        """Show help."""
        await self.show_help()

    def action_toggle_sessions(self: KeysHost) -> None:
        """Show or hide the sessions panel."""
        self.show_panel("sessions", not self.sessions_panel.display)

    def action_toggle_status(self: KeysHost) -> None:
        """Show or hide the status panel."""
        self.show_panel("status", not self.status_panel.display)

    async def action_focus_sessions(self: KeysHost) -> None:
        """Focus the sessions list (showing the panel)."""
        await self.sessions.focus_list()

    async def action_search_sessions(self: KeysHost) -> None:
        """Show the sessions panel and focus its search box."""
        await self.sessions.open_search()

    def action_focus_composer(self: KeysHost) -> None:
        """Focus the composer."""
        self.composer.focus()

    def action_focus_transcript(self: KeysHost) -> None:
        """Focus the transcript (arrow keys and page keys scroll it)."""
        self.transcript.focus()

    def pasted_images(self: KeysHost, text: str) -> str | None:
        """A paste naming only image files as their mentions (G4); a refusal is a notice."""
        from hermes_tui.image_paste import PasteRefused, image_mentions

        try:
            return image_mentions(text, self.workspace, self.config.home)
        except PasteRefused as exc:
            self.notify(str(exc), severity="warning")
            return ""

    def action_paste_image(self: KeysHost) -> None:
        """Attach the clipboard's image to the composer (wl-paste or xclip), off the key path."""
        self.run_worker(
            self._paste_clipboard_image, thread=True, group="paste", exit_on_error=False
        )

    def _paste_clipboard_image(self: KeysHost) -> None:
        from agent import pasted_images
        from agent.images import ImageRefused
        from hermes_tui.image_paste import NO_IMAGE, PasteRefused, clipboard_image

        try:
            mention = pasted_images.keep(self.config.home, clipboard_image(), "clipboard")
        except (PasteRefused, ImageRefused, OSError) as exc:
            # No image: the key pastes as the composer's own ctrl+v does.
            self.call_from_thread(self.composer.action_paste)
            if str(exc) != NO_IMAGE:
                self.call_from_thread(self.notify, str(exc), severity="warning")
            return
        self.call_from_thread(self.composer.take_typed, f"{mention} ")

    def action_copy(self: KeysHost) -> None:
        """Copy the code block under the mouse, else the selected or last answer (OSC 52)."""
        transcript = self.transcript
        clip = clip_for(self.mouse_over, transcript.selected, list(transcript.children))
        if clip is None:
            self.notify("Nothing to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(clip.text)
        lines = clip.text.count("\n") + 1
        self.notify(f"Copied the {clip.what} ({lines} line{'s' if lines > 1 else ''}).")

    def action_jump(self: KeysHost, step: int) -> None:
        """Select the previous or next message in the transcript."""
        self.transcript.jump(step)

    def action_follow(self: KeysHost) -> None:
        """Scroll the transcript to its newest row and follow it again."""
        self.transcript.anchor()

    def action_page(self: KeysHost, step: int) -> None:
        """Scroll by a page: an open screen that pages (/help), else the transcript."""
        page = getattr(self.screen, "scroll_by_page", None)
        if callable(page):
            page(step)
            return
        if step < 0:
            self.transcript.page_up()
        else:
            self.transcript.page_down()
