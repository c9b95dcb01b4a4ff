"""The line above the composer: command hints, argument choices, and the `@` file picker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_name

HINTS_SHOWN = 4
"""Command and argument hints on the line before `… N more`."""
PICKER_ROWS = 8
"""Paths the picker shows at once; the highlight scrolls the rest into view."""


class Choice(NamedTuple):
    """One thing Tab can complete to: `label` is shown (and inserted), `detail` dim after."""

    label: str
    detail: str = ""


def _fit(text: str, width: int) -> str:
    """`text` within `width` cells, its start cut (`…/deep/file.py`): the end says most."""
    if width <= 1 or len(text) <= width:
        return text
    return "…" + text[-(width - 1) :]


class CompletionPopup(Static):
    """Shows what Tab would complete; hidden when there is nothing to complete."""

    picker_lines: int | None = None
    """Lines the open picker shows, when none of them wraps: the same count again repaints
    without a layout of the whole screen (a key in the picker costs a repaint, not a reflow)."""

    def on_mount(self) -> None:
        self.display = False

    def hide(self) -> None:
        """Nothing to complete (a no-op when hidden: this runs on every key)."""
        if not self.display:
            return
        self.display = False
        self.picker_lines = None
        self.remove_class("-picker")
        self.update("")

    def show_hints(self, choices: Sequence[Choice], highlight: int | None = None) -> None:
        """Command names or arguments on a line, `highlight` (Tab's pick) marked."""
        if not choices:
            self.hide()
            return
        parts = []
        for index, choice in enumerate(choices[:HINTS_SHOWN]):
            style = "bold reverse" if index == highlight else "bold"
            # Custom command names and session titles come from files and the database:
            # each is one row, its newlines and controls shown (H1).
            parts.append(
                Content.assemble(
                    (safe_name(choice.label), style), " ", (safe_name(choice.detail), "dim")
                )
            )
        if len(choices) > HINTS_SHOWN:
            parts.append(Content(f"… {len(choices) - HINTS_SHOWN} more"))
        self.picker_lines = None
        self.remove_class("-picker")
        self.display = True
        self.update(Content("   ").join(parts))

    def show_picker(
        self, title: str, choices: Sequence[Choice], highlight: int, status: str = ""
    ) -> None:
        """The `@` picker: a title line, then paths, the highlighted one marked."""
        width = max(self.content_region.width or self.size.width or 80, 20)
        start = max(0, min(highlight - PICKER_ROWS // 2, len(choices) - PICKER_ROWS))
        lines = [
            Content.assemble(
                ("@", "bold $accent"),
                (safe_name(title), "bold"),
                ("  " + safe_name(status), "dim"),
            )
        ]
        for index in range(start, min(start + PICKER_ROWS, len(choices))):
            choice = choices[index]
            # One path, one row: a name with a newline cannot pose as two entries (H1).
            label = _fit(safe_name(choice.label), width - 4)
            if index == highlight:
                lines.append(Content.styled(f"▸ {label}", "bold $text on $primary 30%"))
            else:
                lines.append(Content(f"  {label}"))
        fits = lines[0].cell_length <= width  # the paths are cut to fit already
        same = fits and self.display and self.picker_lines == len(lines)
        self.picker_lines = len(lines) if fits else None
        self.add_class("-picker")
        self.display = True
        self.update(Content("\n").join(lines), layout=not same)
