"""Above the composer: the command list, argument choices, and the `@` file picker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from textual.content import Content
from textual.widget import Widget
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


class CommandRow(NamedTuple):
    """One command in the command list: its usage, where it comes from, its help."""

    usage: str
    origin: str
    help: str


USAGE_WIDTH = 30
"""The most the command list's usage column takes; a longer usage is cut."""


def _cut(text: str, width: int) -> str:
    """`text` within `width` cells, its end cut (`…`): a help line, a usage."""
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


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

    def show_commands(self, typed: str, rows: Sequence[CommandRow], highlight: int) -> None:
        """The command list: a title line, then every command matching `typed` (a window of
        PICKER_ROWS around the highlight), each with its origin and help on one row."""
        width = self._width()
        start = max(0, min(highlight - PICKER_ROWS // 2, len(rows) - PICKER_ROWS))
        end = min(start + PICKER_ROWS, len(rows))
        count = f"{len(rows)} commands" if len(rows) != 1 else "1 command"
        if end - start < len(rows):
            count = f"{start + 1}-{end} of {count}"  # the rest are a move away, and say so
        status = f"{count} · ↑↓ move · tab or enter picks · esc closes"
        typed = _cut(safe_name(typed), width // 2)
        status = _cut(status, width - len(typed) - 2)
        lines = [Content.assemble((typed, "bold $accent"), ("  " + status, "dim"))]
        # Names, hints and help of custom commands and MCP prompts come from files and
        # servers: each is one row, its controls shown (H1).
        shown = [(safe_name(row.usage), safe_name(row.origin), safe_name(row.help)) for row in rows]
        usage_width = min(max(len(usage) for usage, _, _ in shown), USAGE_WIDTH, width // 3)
        origin_width = max(len(origin) for _, origin, _ in shown)
        help_width = max(width - 2 - usage_width - origin_width - 4, 0)
        for index in range(start, end):
            usage, origin, help_text = shown[index]
            cells = (
                "▸ " if index == highlight else "  ",
                _cut(usage, usage_width).ljust(usage_width),
                "  ",
                origin.ljust(origin_width),
                "  ",
                _cut(help_text, help_width),
            )
            if index == highlight:
                lines.append(Content.styled("".join(cells), "bold $text on $primary 30%"))
            else:
                marker, name, gap, where, gap2, said = cells
                lines.append(
                    Content.assemble(
                        marker, (name, "bold"), gap, (where, "dim italic"), gap2, (said, "dim")
                    )
                )
        self._show_lines(lines, fits=True)  # every line is cut to the width

    def show_picker(
        self, title: str, choices: Sequence[Choice], highlight: int, status: str = ""
    ) -> None:
        """The `@` picker: a title line, then paths, the highlighted one marked."""
        width = self._width()
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
        self._show_lines(lines, fits=lines[0].cell_length <= width)  # paths are cut to fit

    def _width(self) -> int:
        """The cells a row has: taken from the parent, as a hidden popup has no width yet."""
        parent = self.parent
        if not isinstance(parent, Widget) or not parent.content_region.width:
            return 80
        return max(parent.content_region.width - self.styles.gutter.width, 20)

    def _show_lines(self, lines: list[Content], *, fits: bool) -> None:
        """Show a list's lines; the same count of unwrapped lines again is only a repaint."""
        same = fits and self.display and self.picker_lines == len(lines)
        self.picker_lines = len(lines) if fits else None
        self.add_class("-picker")
        self.display = True
        self.update(Content("\n").join(lines), layout=not same)
