"""What the keys in the binding table do: the `action_*` methods Textual calls on the app."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hermes_tui.clipboard import clip_for

if TYPE_CHECKING:
    from hermes_tui.app import HermesApp


QUIT_AGAIN_SECONDS = 2.0
"""ctrl+c on an idle, empty composer quits when pressed again within this time."""
QUIT_CONFIRM_SECONDS = 5.0
"""With background processes running, the quit key quits when pressed again within this
time (G2): the first press says which processes quitting stops."""


class KeyActions:
    """The app's key actions (mixed into HermesApp); each hands over to the part that acts.

    Each method is typed on HermesApp (`self: HermesApp`): the mixin is only ever that app.
    """

    _quit_armed_at: float | None = None
    _quit_confirm_at: float | None = None

    def check_action(self: HermesApp, action: str, parameters: tuple[object, ...]) -> bool | None:
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

    async def action_quit(self: HermesApp) -> None:
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

    def _background_warning(self: HermesApp) -> str | None:
        """`2 background processes will be stopped: bg1 (...), ...`, or None with none."""
        from agent import background

        return background.will_stop_sentence(background.BACKGROUND.running())

    async def quit_now(self: HermesApp) -> None:
        """Quit; writes that another process's lock holds up get a bounded wait first (H7).

        The wait says what it waits for; quitting again leaves at once.
        """
        if self._quitting or self.db is None or self.db.idle:
            self.exit(0)
            return
        self._quitting = True
        self.run_worker(self._save_then_exit(), group="exit", exclusive=True, exit_on_error=False)

    async def _save_then_exit(self: HermesApp) -> None:
        from storage.errors import sentence

        quit_key = self.keys.shown("app.quit")

        def tell(waiting: str) -> None:
            notice = f"{sentence(waiting)[:-1]}: {quit_key} again quits now."
            self.call_later(self.notice, notice, "warning")

        try:
            await self.db.wait_saved(self.config.storage.exit_wait_seconds, on_wait=tell)
        finally:
            self.exit(0)

    def action_stop(self: HermesApp) -> None:
        """Stop the running turn, or the one being sent (Z1); with none, Esc twice on an
        empty composer opens the rewind picker (an Esc that stops never counts towards it)."""
        if self.busy:
            self.turns.stop()
        self.changes.escape_pressed(time.monotonic())

    async def action_interrupt(self: HermesApp) -> None:
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

    def action_steer_composer(self: HermesApp) -> None:
        """Send the composer's text into the running turn as a steer, as text (T2, T4)."""
        # After the characters still queued for the composer (see Composer.action_submit).
        self.composer.call_later(self._steer_composer_text)

    async def _steer_composer_text(self: HermesApp) -> None:
        text = self.composer.text
        if not text.strip():
            return
        self.composer.remember(text)
        await self.send(text, "steer")

    def action_focus_queue(self: HermesApp) -> None:
        """Focus the queued items (delete removes one, e puts it back in the input)."""
        self.show_panel("status")
        self.status_panel.queue_view.list.focus()

    async def action_resume_queue(self: HermesApp) -> None:
        """Let a paused queue run again."""
        await self.turns.resume_queue()

    async def action_cycle_mode(self) -> None:
        """Step the approval mode: ask, auto-edit, plan (N1)."""
        if self.agent is not None:  # before it is up there is no mode to switch yet
            await self.modes.cycle()

    async def action_new_session(self) -> None:
        """Start a new session."""
        await self.run_command("/new")

    async def action_help(self: HermesApp) -> None:
        """Show help."""
        await self.show_help()

    def action_toggle_sessions(self: HermesApp) -> None:
        """Show or hide the sessions panel."""
        self.show_panel("sessions", not self.sessions_panel.display)

    def action_toggle_status(self: HermesApp) -> None:
        """Show or hide the status panel."""
        self.show_panel("status", not self.status_panel.display)

    async def action_focus_sessions(self: HermesApp) -> None:
        """Focus the sessions list (showing the panel)."""
        await self.sessions.focus_list()

    async def action_search_sessions(self: HermesApp) -> None:
        """Show the sessions panel and focus its search box."""
        await self.sessions.open_search()

    def action_focus_composer(self: HermesApp) -> None:
        """Focus the composer."""
        self.composer.focus()

    def action_focus_transcript(self: HermesApp) -> None:
        """Focus the transcript (arrow keys and page keys scroll it)."""
        self.transcript.focus()

    def pasted_images(self: HermesApp, text: str) -> str | None:
        """A paste naming only image files as their mentions (G4); a refusal is a notice."""
        from hermes_tui.image_paste import PasteRefused, image_mentions

        try:
            return image_mentions(text, self.workspace, self.config.home)
        except PasteRefused as exc:
            self.notify(str(exc), severity="warning")
            return ""

    def action_paste_image(self: HermesApp) -> None:
        """Attach the clipboard's image to the composer (wl-paste or xclip), off the key path."""
        self.run_worker(
            self._paste_clipboard_image, thread=True, group="paste", exit_on_error=False
        )

    def _paste_clipboard_image(self: HermesApp) -> None:
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

    def action_copy(self: HermesApp) -> None:
        """Copy the code block under the mouse, else the selected or last answer (OSC 52)."""
        transcript = self.transcript
        clip = clip_for(self.mouse_over, transcript.selected, list(transcript.children))
        if clip is None:
            self.notify("Nothing to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(clip.text)
        lines = clip.text.count("\n") + 1
        self.notify(f"Copied the {clip.what} ({lines} line{'s' if lines > 1 else ''}).")

    def action_jump(self: HermesApp, step: int) -> None:
        """Select the previous or next message in the transcript."""
        self.transcript.jump(step)

    def action_follow(self: HermesApp) -> None:
        """Scroll the transcript to its newest row and follow it again."""
        self.transcript.anchor()

    def action_page(self: HermesApp, step: int) -> None:
        """Scroll by a page: an open screen that pages (/help), else the transcript."""
        page = getattr(self.screen, "scroll_by_page", None)
        if callable(page):
            page(step)
            return
        if step < 0:
            self.transcript.page_up()
        else:
            self.transcript.page_down()
