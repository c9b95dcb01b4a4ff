"""A block with a one-line header that folds its body away (reasoning, tool output)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static


class Foldable(Vertical, can_focus=True):
    """A header line plus a body that Enter, space or a click folds and unfolds."""

    BINDINGS = [
        Binding("enter,space", "fold", "fold", show=False),
    ]

    expanded: reactive[bool] = reactive(False)

    def __init__(self, *, expanded: bool = False, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.header = Static(classes="fold-header")
        self.body = Static(classes="fold-body")
        self.set_reactive(Foldable.expanded, expanded)

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.body

    def on_mount(self) -> None:
        self._refresh_fold()

    def watch_expanded(self) -> None:
        self._refresh_fold()

    def _refresh_fold(self) -> None:
        self.body.display = self.expanded and self.has_body()
        self.header.update(self.header_content())

    def refresh_header(self) -> None:
        """Draw the header again (what it shows changed)."""
        self.header.update(self.header_content())

    def has_body(self) -> bool:
        """Whether there is anything to unfold."""
        return True

    def header_content(self) -> Content:
        """The header line; subclasses describe themselves."""
        return Content("")

    def action_fold(self) -> None:
        """Fold or unfold the body."""
        self.expanded = not self.expanded

    def on_click(self) -> None:
        self.action_fold()
