"""The line under the transcript that says something new arrived below the view."""

from __future__ import annotations

from textual.content import Content
from textual.message import Message
from textual.widgets import Static

TEXT = "↓ new below · {key} or a click follows"


class NewBelowLine(Static):
    """Hidden until the transcript reports new content out of sight; a click follows it."""

    class Follow(Message):
        """The user asked to follow the transcript's bottom again."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.display = False

    def show(self, shown: bool, key: str) -> None:
        """Show (with `key`, the one that follows) or hide the line."""
        self.display = shown
        if shown:
            self.update(Content(TEXT.format(key=key)))

    def on_click(self) -> None:
        self.post_message(self.Follow())
