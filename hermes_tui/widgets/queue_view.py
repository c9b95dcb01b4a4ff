"""The input queue in the status panel: each waiting item, removable or editable (T1, T6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.safe_text import safe_name

LINE_WIDTH = 22
"""Characters on one line of the status panel: each item keeps to one line."""


class QueuedInput(Protocol):
    """One waiting item as the queue shows it (agent.inbox.QueuedInput)."""

    id: int
    text: str
    origin: str


ORIGIN_MARKS = {"queued": "", "steer": " steer", "redirect": " redirect"}


def item_label(position: int, item: QueuedInput) -> Content:
    """`1 fix the tests…` then its origin when it was not typed as a plain queued line."""
    number = f"{position} "
    origin = ORIGIN_MARKS.get(item.origin, f" {item.origin}")
    room = LINE_WIDTH - len(number) - len(origin)
    # One row per item, its line breaks shown (␊): what is queued is what runs.
    text = safe_name(item.text)
    if len(text) > room:
        text = text[: room - 1] + "…"
    return Content.assemble((number, "dim"), text, (origin, "$accent italic"))


class QueueList(OptionList):
    """The focusable list: delete removes the highlighted item, e or Enter edits it."""

    BINDINGS = [
        Binding("delete,backspace", "remove_item", "remove", id="queue.remove"),
        Binding("e", "edit_item", "edit", id="queue.edit"),
    ]

    class Remove(Message):
        """The user removed the queued item `item_id`."""

        def __init__(self, item_id: int) -> None:
            super().__init__()
            self.item_id = item_id

    class Edit(Message):
        """The user pulled the queued item `item_id` back into the composer."""

        def __init__(self, item_id: int) -> None:
            super().__init__()
            self.item_id = item_id

    def _highlighted_id(self) -> int | None:
        option = self.highlighted_option
        return int(option.id) if option is not None and option.id is not None else None

    def action_remove_item(self) -> None:
        """Remove the highlighted item."""
        item_id = self._highlighted_id()
        if item_id is not None:
            self.post_message(self.Remove(item_id))

    def action_edit_item(self) -> None:
        """Pull the highlighted item into the composer."""
        item_id = self._highlighted_id()
        if item_id is not None:
            self.post_message(self.Edit(item_id))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Edit(int(event.option.id)))


class QueueView(Vertical):
    """`Queue (2) · paused`, the items, and how to act on them; hidden when empty."""

    def compose(self) -> ComposeResult:
        # Empty (and hidden) until the first item is queued: three widgets fewer before the
        # first frame. show() mounts them.
        return iter(())

    @property
    def list(self) -> QueueList:
        """The focusable item list."""
        return self.query_one(QueueList)

    def show(
        self, items: Sequence[QueuedInput], *, paused: bool, focus_key: str, resume_key: str
    ) -> None:
        """Replace the items, keeping the highlight near where it was."""
        self.display = bool(items)
        if not self.children:
            if not items:
                return
            self.mount(
                Static(id="queue-title"), QueueList(id="queue-list"), Static(id="queue-help")
            )
        title = Content.assemble(("Queue", "bold $accent"), f" ({len(items)})")
        if paused:
            title = Content.assemble(title, (" · paused", "$warning bold"))
        self.query_one("#queue-title", Static).update(title)
        option_list = self.list
        highlighted = option_list.highlighted
        option_list.clear_options()
        option_list.add_options(
            Option(item_label(position, item), id=str(item.id))
            for position, item in enumerate(items, 1)
        )
        if items:
            option_list.highlighted = min(highlighted or 0, len(items) - 1)
        hint = f"{focus_key}: del remove, e edit"
        if paused:
            hint = f"{resume_key} resume\n{hint}"
        self.query_one("#queue-help", Static).update(Content.styled(hint, "dim"))
