"""The /ps panel: the background processes (G2), the highlighted one's output, a stop key.

It reads the table twice a second; a stop runs on a thread (it may wait out the grace
before SIGKILL) and its sentence is a notice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from textual.binding import Binding
from textual.content import Content
from textual.widgets.option_list import Option

from agent.background import BackgroundProcess, BackgroundTable
from hermes_tui.processes_view import process_detail, process_row
from hermes_tui.screens.list_detail import ListDetailScreen

HINT = "↑↓ process · s stop · Esc close"
NONE = "No background processes: the agent starts one with run_shell(background: true)."


class ProcessesScreen(ListDetailScreen):
    """Lists the background processes; the highlighted one's command and output below."""

    PREFIX = "ps"
    LIST_ID = "ps-list"
    TITLE_TEXT = "Background processes"
    HINT_TEXT = HINT

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

    def on_mount(self) -> None:
        options = self.rows
        options.focus()
        self.keep_fresh()
        if options.option_count:
            options.highlighted = options.option_count - 1  # the newest

    @property
    def selected(self) -> BackgroundProcess | None:
        """The highlighted process, or None."""
        options = self.rows
        if options.highlighted is None or not self._ids:
            return None
        wanted = self._ids[options.highlighted]
        return next((entry for entry in self.table.processes() if entry.id == wanted), None)

    def refresh_view(self) -> None:
        """Redraw the rows (new ones added) and the highlighted one's detail."""
        options = self.rows
        now = self._clock()
        for entry in self.table.processes():
            row = Content(process_row(entry, now))
            if entry.id in self._ids:
                options.replace_option_prompt_at_index(self._ids.index(entry.id), row)
            else:
                self._ids.append(entry.id)
                options.add_option(Option(row, id=entry.id))
        chosen = self.selected
        self.detail.update(Content(NONE if chosen is None else process_detail(chosen)))

    async def action_stop(self) -> None:
        """Stop the highlighted process's group, off the UI thread."""
        entry = self.selected
        if entry is None:
            return
        sentence = await asyncio.to_thread(self.table.stop, entry.id)
        await self._notice(sentence, "info")
        self.refresh_view()
