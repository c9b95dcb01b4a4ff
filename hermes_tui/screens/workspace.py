"""Resuming a session from another folder: work in its folder, or continue here?"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_name
from hermes_tui.screens.dialog import DialogScreen

THERE, HERE = "there", "here"


class WorkspaceScreen(DialogScreen[str]):
    """Asks where a resumed session's tools run; dismisses with THERE or HERE."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #workspace-dialog {
        max-width: 80;
    }
    """

    BINDINGS = [
        Binding("s", "answer('there')", "switch to its folder", id="workspace.switch"),
        Binding("c,escape", "answer('here')", "continue here", id="workspace.here"),
    ]

    def __init__(self, title: str, there: str, here: str) -> None:
        super().__init__()
        self.title_text, self.there, self.here = safe_name(title), safe_name(there), safe_name(here)

    def compose(self) -> ComposeResult:
        with Vertical(id="workspace-dialog", classes="dialog"):
            yield Static(Content.styled("This session worked in another folder", "bold"))
            yield Static(
                Content.assemble(
                    (self.title_text, "bold"),
                    " ran its tools in\n  ",
                    (self.there, "$accent"),
                    "\nand this window is in\n  ",
                    (self.here, "$accent"),
                )
            )
            yield Static(
                Content.styled(
                    "s switch to its folder · c or Esc continue here (the session moves here)",
                    "dim",
                )
            )

    def action_answer(self, where: str) -> None:
        """Close with the user's answer."""
        self.dismiss(where)
