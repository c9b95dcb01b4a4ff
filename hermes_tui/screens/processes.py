"""The /ps panel: the background processes (G2), the highlighted one's output, a stop key.

It reads the table twice a second; a stop runs on a thread (it may wait out the grace
before SIGKILL) and its sentence is a notice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.background import BackgroundProcess, BackgroundTable
from hermes_tui.processes_view import process_detail, process_row

HINT = "↑↓ process · s stop · Esc close"
REFRESH_SECONDS = 0.5
NONE = "No background processes: the agent starts one with run_shell(background: true)."


class ProcessesScreen(ModalScreen[None]):
    """Lists the background processes; the highlighted one's command and output below."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #ps-dialog {
        width: 90%;
        max-width: 110;
        height: 90%;
        padding: 0 1;
        border: thick $accent;
        background: $surface;
    }

    #ps-list {
        height: auto;
        max-height: 10;
    }

    #ps-detail {
        height: 1fr;
        background: $boost;
    }

    #ps-hint {
        color: $text-muted;
    }
    """

    BINDINGS = [
        Binding("escape,q", "dismiss_panel", "close", id="ps.close"),
        Binding("s", "stop", "stop", id="ps.stop"),
    ]

    def __init__(
        self,
        table: BackgroundTable,
        notice: Callable[[str, str], Awaitable[None]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.table = table
        self._notice = notice
        self._clock = clock
        self._ids: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="ps-dialog"):
            yield Static(Content.styled("Background processes", "bold $accent"), id="ps-title")
            yield OptionList(id="ps-list")
            with VerticalScroll(id="ps-detail"):
                yield Static(id="ps-detail-text")
            yield Static(Content(HINT), id="ps-hint")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        self.refresh_view()
        if options.option_count:
            options.highlighted = options.option_count - 1  # the newest
        self.set_interval(REFRESH_SECONDS, self.refresh_view)

    @property
    def selected(self) -> BackgroundProcess | None:
        """The highlighted process, or None."""
        options = self.query_one(OptionList)
        if options.highlighted is None or not self._ids:
            return None
        wanted = self._ids[options.highlighted]
        return next((entry for entry in self.table.processes() if entry.id == wanted), None)

    def refresh_view(self) -> None:
        """Redraw the rows (new ones added) and the highlighted one's detail."""
        options = self.query_one(OptionList)
        now = self._clock()
        for entry in self.table.processes():
            row = Content(process_row(entry, now))
            if entry.id in self._ids:
                options.replace_option_prompt_at_index(self._ids.index(entry.id), row)
            else:
                self._ids.append(entry.id)
                options.add_option(Option(row, id=entry.id))
        chosen = self.selected
        detail = self.query_one("#ps-detail-text", Static)
        detail.update(Content(NONE if chosen is None else process_detail(chosen)))

    def on_option_list_option_highlighted(self, _event: OptionList.OptionHighlighted) -> None:
        self.refresh_view()

    def action_dismiss_panel(self) -> None:
        """Close the panel."""
        self.dismiss(None)

    async def action_stop(self) -> None:
        """Stop the highlighted process's group, off the UI thread."""
        entry = self.selected
        if entry is None:
            return
        sentence = await asyncio.to_thread(self.table.stop, entry.id)
        await self._notice(sentence, "info")
        self.refresh_view()
