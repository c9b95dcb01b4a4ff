"""Turning yolo mode on: asked once, since nothing asks after it (N1)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from hermes_tui.screens.dialog import DialogScreen

YOLO_WARNING = (
    "Every file write and shell command runs without asking, writes to protected paths "
    "(.git, .envrc) included, until you switch back (shift+Tab or /mode)."
)


class YoloScreen(DialogScreen[bool]):
    """Asks whether yolo mode is really wanted; dismisses with True for yes."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #yolo-dialog {
        max-width: 80;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "yes, yolo", id="yolo.yes"),
        Binding("n,escape", "answer(False)", "no", id="yolo.no"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="yolo-dialog", classes="dialog"):
            yield Static(Content.styled("Switch to yolo mode?", "bold $warning"))
            yield Static(Content(YOLO_WARNING))
            yield Static(Content.styled("y yes · n or Esc no", "dim"))

    def action_answer(self, yes: bool) -> None:
        """Close with the user's answer."""
        self.dismiss(yes)
