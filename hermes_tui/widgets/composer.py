"""The composer: multi-line input, history, and Tab (through a CompletionKeys)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.timer import Timer
from textual.widgets import TextArea
from textual.widgets.text_area import Document

LARGE_TEXT_CHARS = 20_000

BLINK_REST_SECONDS = 10.0
"""The cursor stops blinking (and stays shown) this long after the last key or click, as
GNOME Terminal and macOS do. Each blink redraws part of the screen twice a second: that was
most of what an idle app spent (Z2: about 1.1 % of a core, 0.3 % without it)."""
"""Above this size the composer stops soft-wrapping: rewrapping every line costs seconds."""


class CompletionKeys(Protocol):
    """What completes the composer's text: told where the cursor is, and given Tab's keys."""

    def follow(self, text: str, cursor: int) -> None:
        """The text or the cursor moved."""
        ...

    def tab(self) -> bool:
        """Complete at the cursor; False when there is nothing to complete."""
        ...

    def enter(self) -> bool:
        """Enter: True when it picked a completion (then it does not send)."""
        ...

    def key(self, key: str) -> bool:
        """Up, Down or Escape: True when the completion used it."""
        ...


class Composer(TextArea):
    """Enter sends; ctrl+j, alt+enter, shift+enter (where the terminal reports it) or a
    trailing backslash then Enter add a newline (see hermes_tui/terminal_keys.py)."""

    BINDINGS = [
        Binding("enter", "submit", "send", show=False, priority=True),
        # Priority, like Enter: a key that reached the app's bindings after bubbling would
        # act after the characters typed behind it (the newline would land at the end).
        Binding(
            "ctrl+j,alt+enter,shift+enter",
            "newline",
            "newline",
            id="composer.newline",
            priority=True,
        ),
        Binding("tab", "complete", "complete", show=False),
    ]

    class Submitted(Message):
        """The user sent the composer's text (already taken out of it and into the history)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(
        self,
        *,
        id: str | None = None,
        cursor_blink: bool = True,
        blink_rest: float | None = None,
    ) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            placeholder="Ask anything · /help for commands",
        )
        self.cursor_blink = cursor_blink
        self._blinks = cursor_blink
        """Whether the cursor blinks while the user is at the keys (it rests after that)."""
        self._blink_rest = BLINK_REST_SECONDS if blink_rest is None else blink_rest
        self._rest_timer: Timer | None = None
        self.completer: CompletionKeys | None = None
        self.image_paster: Callable[[str], str | None] | None = None
        """What a paste naming only image files becomes (their `@` mentions, G4), or None."""
        self.sent: list[str] = []
        self._history_index: int | None = None
        self._draft = ""

    def on_mount(self) -> None:
        self.wake_blink()

    def wake_blink(self) -> None:
        """Blink again (a key, a click, a paste), and rest `blink_rest` s after this one."""
        if not self._blinks:
            return
        if self._rest_timer is not None and self.cursor_blink:
            self._rest_timer.reset()
            return
        self.cursor_blink = True
        self._rest_timer = self.set_timer(self._blink_rest, self._rest_blink)

    def _rest_blink(self) -> None:
        # The cursor stays shown: TextArea pauses its blink visible while focused.
        self.cursor_blink = False

    def action_submit(self) -> None:
        """Send the text, unless the line ends in a backslash (then it is a newline)."""
        # A priority binding runs on the app's queue, ahead of characters typed just before
        # Enter that still wait in this widget's queue: read the text after them.
        self.call_later(self._submit_in_order)

    def _submit_in_order(self) -> None:
        if self._completing("enter"):
            return
        row, column = self.cursor_location
        line = self.document.get_line(row)
        if column > 0 and line[:column].endswith("\\"):
            self.replace("\n", (row, column - 1), (row, column))
            return
        text = self.text
        if not text.strip():
            return
        # Taken out now, in the same step that read it: whatever is typed from here on is
        # the next draft, however long the send takes (Z1).
        self.remember(text)
        self.post_message(self.Submitted(text))

    def remember(self, text: str) -> None:
        """Add a sent text to the history and clear the composer."""
        if not self.sent or self.sent[-1] != text:
            self.sent.append(text)
        self._history_index = None
        self.load_text("")
        self.soft_wrap = True

    def take_typed(self, text: str) -> None:
        """Insert text typed or pasted while a dialog held the keys, as if typed here."""
        if len(text) + len(self.text) > LARGE_TEXT_CHARS:
            self.soft_wrap = False
        self.replace(text, *self.selection, maintain_selection_offset=False)

    async def _on_paste(self, event: events.Paste) -> None:
        self.wake_blink()
        # TextArea's own handler runs after this one (Textual dispatches along the MRO).
        mentions = self.image_paster(event.text) if self.image_paster is not None else None
        if mentions is not None:  # a dropped or pasted image path: attached as an image
            event.prevent_default()
            event.stop()
            self.replace(mentions, *self.selection, maintain_selection_offset=False)
            return
        if len(event.text) + len(self.text) > LARGE_TEXT_CHARS:
            self.soft_wrap = False

    def action_newline(self) -> None:
        """Insert a newline at the cursor, after the characters typed before the key."""
        self.call_later(self.insert, "\n")

    def action_complete(self) -> None:
        """Complete at the cursor; with nothing to complete, Tab does nothing here."""
        self._completing("tab")

    def _completing(self, key: str) -> bool:
        """Hand `key` to the completer, after telling it where the cursor is now."""
        completer = self.completer
        if completer is None:
            return False
        self.follow_cursor()
        if key == "tab":
            return completer.tab()
        if key == "enter":
            return completer.enter()
        return completer.key(key)

    def follow_cursor(self) -> None:
        """Tell the completer where the text and the cursor are."""
        if self.completer is not None:
            # TextArea builds a Document (or its syntax-aware subclass) but types the
            # attribute as the abstract base, which has no index lookup.
            document = cast(Document, self.document)
            cursor = document.get_index_from_location(self.cursor_location)
            self.completer.follow(self.text, cursor)

    def on_text_area_changed(self, _event: TextArea.Changed) -> None:
        self.follow_cursor()

    def on_text_area_selection_changed(self, _event: TextArea.SelectionChanged) -> None:
        self.wake_blink()
        self.follow_cursor()

    def on_focus(self) -> None:
        self.wake_blink()

    async def _on_key(self, event: events.Key) -> None:
        self.wake_blink()
        # The picker's keys first; then up/down at the edges are ours; TextArea's handler
        # runs next (MRO dispatch).
        # A text recalled from the history (a `/help` sent earlier) opens the command list
        # too; Up / Down go on walking the history until the recalled text is edited.
        recalled = self._history_index is not None and self.text == self.sent[self._history_index]
        walking = recalled and event.key in ("up", "down")
        if event.key in ("up", "down", "escape") and not walking and self._completing(event.key):
            event.prevent_default()
            event.stop()
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.prevent_default()
            event.stop()
            self._recall(-1)
            return
        last_row = self.document.line_count - 1
        at_last_row = self.cursor_location[0] == last_row
        if event.key == "down" and at_last_row and self._history_index is not None:
            event.prevent_default()
            event.stop()
            self._recall(+1)

    def _recall(self, step: int) -> None:
        """Walk the history: older with -1, newer with +1; past the newest is the draft."""
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.sent) - 1
        else:
            index = self._history_index + step
        if index < 0:
            return
        if index >= len(self.sent):
            self._history_index = None
            self.load_text(self._draft)
        else:
            self._history_index = index
            self.load_text(self.sent[index])
        self.move_cursor(self.document.end)
