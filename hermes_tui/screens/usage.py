"""The /usage screen: spend and tokens by day, model and project, with cache savings ($2)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from hermes_tui.screens.dialog import DialogScreen
from hermes_tui.usage_view import HEADERS, UsageLine, total_line

HINT = "↑↓ PageUp PageDown scroll · Esc close · hermes-tui usage --json for scripts"
RIGHT_ALIGNED = 3
"""Columns from this one on are numbers, aligned right."""


class UsageScreen(DialogScreen[None]):
    """The usage table of the last days, newest first, its total last."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #usage-dialog {
        width: 95%;
        max-width: 130;
        height: 90%;
    }

    #usage-table {
        height: 1fr;
    }

    #usage-hint, #usage-session {
        color: $text-muted;
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss_usage", "close", id="usage.close")]

    def __init__(self, lines: Sequence[UsageLine], days: int, session_line: str) -> None:
        super().__init__()
        self.lines = list(lines)
        self.days = days
        self.session_line = session_line

    def compose(self) -> ComposeResult:
        with Vertical(id="usage-dialog", classes="dialog"):
            title = f"Usage, the last {self.days} days"
            yield Static(Content.styled(title, "bold $accent"), id="usage-title")
            yield Static(Content(self.session_line), id="usage-session")
            yield DataTable(id="usage-table", cursor_type="row", zebra_stripes=True)
            yield Static(Content(HINT), id="usage-hint")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*HEADERS)
        if not self.lines:
            table.add_row("no usage yet", *[""] * (len(HEADERS) - 1))
        for line in self.lines:
            table.add_row(*_aligned(line.cells()))
        if self.lines:
            table.add_row(*_aligned(total_line(self.lines)))
        table.focus()

    def action_dismiss_usage(self) -> None:
        """Close the screen."""
        self.dismiss(None)


def _aligned(cells: Sequence[str]) -> list[object]:
    """The number columns right-aligned, as the CLI's table has them."""
    from rich.text import Text

    return [Text(c, justify="right") if i >= RIGHT_ALIGNED else c for i, c in enumerate(cells)]
