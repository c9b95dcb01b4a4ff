"""The transcript: the one scroll container; the live turn below the window of stored rows."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget

from agent import events as ev
from hermes_tui.textual_compat import anchor_released
from hermes_tui.widgets.messages import ErrorBlock, NoticeLine, UserMessage
from hermes_tui.widgets.transcript.live import LiveTurn
from hermes_tui.widgets.transcript.rows import RowReader
from hermes_tui.widgets.transcript.window import HistorySource, HistoryWindow

if TYPE_CHECKING:
    from hermes_tui.widgets.welcome import WelcomeFacts

WELCOME = "Welcome"
"""The welcome's widget type, as a selector: its module loads with the first welcome, after
the first frame (SPEC Z2), so none can be on screen before it."""


def jump_targets() -> tuple[type[Widget], ...]:
    """The rows the jump keys stop at."""
    from hermes_tui.widgets.answer import AnswerBlock

    return (UserMessage, AnswerBlock, ErrorBlock)


class Transcript(VerticalScroll):
    """Follows the bottom while the user is there; says when something new arrives below
    while they read further up (`NewBelow`), and follows again once they are back."""

    class NewBelow(Message):
        """Something new arrived below the view (`shown`), or the view is back at the bottom."""

        def __init__(self, shown: bool) -> None:
            super().__init__()
            self.shown = shown

    def __init__(self, *, id: str | None = None, show_reasoning: bool = True) -> None:
        super().__init__(id=id)
        self.live = LiveTurn(self, show_reasoning=show_reasoning)
        self.window = HistoryWindow(self)
        self._selected: Widget | None = None
        self.new_below = False
        """True while something arrived below a view the user scrolled up from."""
        self.last_user: UserMessage | None = None
        """The user message of the running turn (its attachments arrive after it)."""
        self.welcome: WelcomeFacts | None = None
        """What an empty session says (None: nothing), shown until a message comes."""
        self._has_messages = False
        """Set the moment a message is sent or a session's history opens (before any await:
        a welcome arriving meanwhile sees it)."""

    def on_mount(self) -> None:
        self.anchor()

    def on_resize(self) -> None:
        self.window.fill.request()

    def on_live_lazy_answer_changed(self) -> None:
        # A long streamed answer finished chunks (live_answer.py): build and release them.
        self.window.fill.request()

    @property
    def filling(self) -> bool:
        """True while long answers near the view are still being built (Z2)."""
        return self.window.fill.busy

    # -- following the bottom ----------------------------------------------------------------
    @property
    def following(self) -> bool:
        """True while new content scrolls into view (the user has not scrolled away)."""
        # Textual's anchor: set by anchor(), released by the user's scrolling (and by any
        # scroll_to that does not say otherwise), taken again when the view reaches the end.
        return self.is_anchored and not anchor_released(self)

    def anchor(self, anchor: bool = True) -> None:
        """Follow the bottom (or stop following it); following, nothing is new below."""
        super().anchor(anchor)
        if anchor:
            self._show_new_below(False)

    def arrived(self) -> None:
        """New content (a row, streamed text) joined the bottom: marked if out of sight."""
        if not self.new_below and not self.following:
            self._show_new_below(True)

    def _show_new_below(self, shown: bool) -> None:
        if shown != self.new_below:
            self.new_below = shown
            self.post_message(self.NewBelow(shown))

    def attach(self, history: HistorySource, reader: RowReader) -> None:
        """Page stored rows from `history`, read with `reader` (once, when the store opens)."""
        self.window.attach(history, reader)

    async def apply(self, event: ev.AgentEvent) -> None:
        """Render one agent event of the running turn."""
        await self.live.apply(event)

    # -- rows --------------------------------------------------------------------------------
    async def add(self, *widgets: Widget) -> None:
        """Mount live rows at the end (below the newest stored row)."""
        await self.window.before_live(widgets)
        await self.mount_all(widgets)
        self.arrived()

    async def replace(self, old: Widget, new: Widget) -> None:
        """Put live row `new` where live row `old` is (a streamed answer turned lazy)."""
        self.window.replace_live(old, new)
        await self.mount(new, before=old)
        if self._selected is old:
            self._selected = new
            new.add_class("-selected")
        await old.remove()

    async def show_welcome(self, facts: WelcomeFacts | None = None) -> None:
        """Say `facts` (the last ones when None: a new session) at the top until the first
        message is sent."""
        self.welcome = facts or self.welcome
        await self._drop_welcome()
        # A message sent before the start-up got here (a quick typist) already took its place.
        if self.welcome is not None and not self._has_messages:
            from hermes_tui.widgets.welcome import Welcome

            await self.mount(Welcome(self.welcome), before=0 if self.children else None)

    def welcome_mode(self, mode: str) -> None:
        """The mode changed: a welcome on screen (and the next one, after /new) says it."""
        if self.welcome is None:
            return
        self.welcome = replace(self.welcome, mode=mode)
        from hermes_tui.widgets.welcome import Welcome, welcome_content

        for widget in self.query_children(WELCOME).results(Welcome):
            widget.update(welcome_content(self.welcome))

    async def _drop_welcome(self) -> None:
        for widget in self.query_children(WELCOME):
            await widget.remove()

    async def add_user(self, text: str) -> None:
        """Show what the user sent and follow the bottom again."""
        self._has_messages = True
        await self._drop_welcome()  # a message in the session: the welcome has said its piece
        self.last_user = UserMessage(text)
        await self.add(self.last_user)
        self.anchor()

    async def add_notice(self, text: str, level: str = "info") -> None:
        """A one-line notice."""
        await self.add(NoticeLine(text, level))

    async def add_error(self, message: str) -> None:
        """An error block."""
        await self.live.end_message()
        await self.add(ErrorBlock(message))

    async def clear(self) -> None:
        """Remove every row (a new or another session)."""
        await self.live.end_message()
        self.live.clear()
        self.window.clear()
        await self.remove_children()
        self._has_messages = False
        self.anchor()

    async def open_history(self) -> None:
        """Show the newest page of the current stored session (D3, U5)."""
        self._has_messages = True
        await self._drop_welcome()
        await self.window.open()

    @property
    def paging(self) -> bool:
        """True while a page of stored rows is being fetched and mounted."""
        return self.window.paging

    # -- scrolling ---------------------------------------------------------------------------
    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.window.scrolled(old_value, new_value)
        self.window.fill.request()
        if self.new_below and self.following:
            self._show_new_below(False)  # the user scrolled back down to it

    def _on_mouse_scroll_up(self, event: Any) -> None:
        # At the very top scroll_y cannot change, so the wheel itself asks for more.
        if self.window.at_top():
            self.window.request_page("older")

    def page_up(self) -> None:
        """Scroll up one page, loading older rows at the top."""
        if self.window.at_top():
            self.window.request_page("older")
        self.scroll_page_up(animate=False)

    def page_down(self) -> None:
        """Scroll down one page, loading newer rows at the bottom."""
        if self.window.at_bottom():
            self.window.request_page("newer")
        self.scroll_page_down(animate=False)

    # -- message navigation ------------------------------------------------------------------
    @property
    def selected(self) -> Widget | None:
        """The message picked with the jump keys, if it is still mounted."""
        widget = self._selected
        return widget if widget is not None and widget.is_attached else None

    def jump(self, step: int) -> Widget | None:
        """Select the previous (-1) or next (+1) message and scroll it to the top."""
        messages = [w for w in self.children if isinstance(w, jump_targets())]
        if not messages:
            return None
        current = self.selected
        # Nothing picked yet: start from the newest message.
        index = messages.index(current) + step if current in messages else len(messages) - 1
        if index < 0:
            self.window.request_page("older")
        index = max(0, min(index, len(messages) - 1))
        if current is not None:
            current.remove_class("-selected")
        target = messages[index]
        target.add_class("-selected")
        self._selected = target
        self.scroll_to_widget(target, top=True, animate=False, immediate=True)
        return target
