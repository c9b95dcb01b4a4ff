"""A panel of rows over the highlighted row's detail, redrawn twice a second (/mcp, /ps)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import OptionList, Static

from hermes_tui.screens.dialog import DialogScreen

REFRESH_SECONDS = 0.5


class ListDetailScreen(DialogScreen[None]):
    """The rows in an option list, the highlighted one's detail below, a hint line last.

    A panel names its parts by `PREFIX` (`#{PREFIX}-dialog`, `#{PREFIX}-detail-text`, ...),
    gives its `TITLE_TEXT`, `HINT_TEXT` and `LIST_ID`, and redraws in `refresh_view`.
    """

    PREFIX: ClassVar[str]
    LIST_ID: ClassVar[str]
    TITLE_TEXT: ClassVar[str]
    HINT_TEXT: ClassVar[str]

    # Its rules load with the first panel, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    ListDetailScreen .list-detail-dialog {
        max-width: 110;
        height: 90%;
    }

    ListDetailScreen .list-detail-rows {
        height: auto;
        max-height: 10;
    }

    ListDetailScreen .list-detail-detail {
        height: 1fr;
        background: $boost;
    }

    ListDetailScreen .list-detail-hint {
        color: $text-muted;
    }
    """

    def compose(self) -> ComposeResult:
        prefix = self.PREFIX
        with Vertical(id=f"{prefix}-dialog", classes="dialog list-detail-dialog"):
            yield Static(Content.styled(self.TITLE_TEXT, "bold $accent"), id=f"{prefix}-title")
            yield OptionList(id=self.LIST_ID, classes="list-detail-rows")
            with VerticalScroll(id=f"{prefix}-detail", classes="list-detail-detail"):
                yield Static(id=f"{prefix}-detail-text")
            yield Static(Content(self.HINT_TEXT), id=f"{prefix}-hint", classes="list-detail-hint")

    @property
    def rows(self) -> OptionList:
        """The option list of rows."""
        return self.query_one(OptionList)

    @property
    def detail(self) -> Static:
        """The highlighted row's detail text."""
        return self.query_one(f"#{self.PREFIX}-detail-text", Static)

    def keep_fresh(self) -> None:
        """Redraw now and twice a second while the panel is open."""
        self.refresh_view()
        self.set_interval(REFRESH_SECONDS, self.refresh_view)

    def refresh_view(self) -> None:
        """Redraw the rows and the detail (each panel says how)."""
        raise NotImplementedError

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self.refresh_view()

    def action_dismiss_panel(self) -> None:
        """Close the panel."""
        self.dismiss(None)
