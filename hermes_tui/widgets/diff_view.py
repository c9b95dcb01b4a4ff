"""A file change as a syntax-coloured diff: unified, or side by side in a wide transcript.

The diff is outside text (file contents the model wrote or a file held): every line goes
through `safe_line`, so a control or invisible character shows as a symbol (H1), and it is
highlighted as code, never read as markup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.safe_text import safe_line, safe_name
from hermes_tui.widgets.foldable import Foldable

SIDE_BY_SIDE_MIN = 156
"""The diff's own width from which it goes side by side (a transcript of 160 columns)."""
MAX_ROWS = 400
"""Diff lines drawn; the rest is counted in a closing line (the tool's output stays whole)."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_STYLES = {"+": "on $success-muted", "-": "on $error-muted"}


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a diff: kind (+, -, space, @ for a hunk, ! for a note), numbers, text."""

    kind: str
    old: int | None
    new: int | None
    text: str


def parse_unified(text: str) -> list[DiffLine]:
    """The lines of a unified diff with their old and new line numbers."""
    rows: list[DiffLine] = []
    old = new = 0
    for line in text.splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows:
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
            rows.append(DiffLine("@", None, None, line))
        elif line.startswith("+"):
            rows.append(DiffLine("+", None, new, line[1:]))
            new += 1
        elif line.startswith("-"):
            rows.append(DiffLine("-", old, None, line[1:]))
            old += 1
        elif line.startswith(" "):
            rows.append(DiffLine(" ", old, new, line[1:]))
            old, new = old + 1, new + 1
        elif line:
            rows.append(DiffLine("!", None, None, line))
    return rows


def _number(value: int | None) -> str:
    return f"{value:>4}" if value is not None else "    "


DiffSide = tuple[DiffLine | None, Content | None]
"""One side of a side-by-side row: the line and its highlighted code (None, None: blank)."""


class DiffView(Widget):
    """A unified diff of one file, coloured as its language, laid out for the width it has."""

    DEFAULT_CSS = """
    DiffView {
        height: auto;
        padding: 0 1;
        background: $boost;
    }
    """

    def __init__(self, text: str, path: str) -> None:
        super().__init__()
        self.path = path
        self.rows = parse_unified(text)

    @cached_property
    def _code(self) -> list[Content]:
        """Each row's text, made safe and highlighted once (a resize only lays it out)."""
        from textual.highlight import guess_language, highlight

        rows = self.rows[:MAX_ROWS]
        texts = [safe_line(row.text.expandtabs(4)) for row in rows]
        code = "\n".join(text for row, text in zip(rows, texts, strict=True) if row.kind in "+- ")
        # One guess for the file: a guess per line ran Pygments' guessers (every lexer's
        # analyse_text when the name did not decide) once a line, and could colour the lines
        # of one file as different languages.
        language = guess_language(code, self.path)
        out = []
        for row, text in zip(rows, texts, strict=True):
            if row.kind in "+- ":
                out.append(highlight(text, language=language) if text.strip() else Content(text))
            else:
                out.append(Content.styled(text, "$text-accent" if row.kind == "@" else "dim"))
        return out

    @property
    def side_by_side(self) -> bool:
        """True when the diff is drawn as two columns, old on the left and new on the right."""
        return self.size.width >= SIDE_BY_SIDE_MIN

    def render(self) -> Content:
        lines = self._side_by_side() if self.side_by_side else self._unified()
        left = len(self.rows) - MAX_ROWS
        if left > 0:
            lines.append(Content.styled(f"… {left} more diff lines", "dim"))
        return Content("\n").join(lines)

    def _unified(self) -> list[Content]:
        out = []
        for row, code in zip(self.rows, self._code, strict=False):
            if row.kind in "@!":
                out.append(code)
                continue
            gutter = Content.styled(f"{_number(row.old)} {_number(row.new)} {row.kind} ", "dim")
            line = Content.assemble(gutter, code)
            style = _STYLES.get(row.kind)
            out.append(line.stylize_before(style) if style else line)
        return out

    def _half(
        self, row: DiffLine | None, code: Content | None, width: int, *, new: bool
    ) -> Content:
        """One side of a side-by-side row, cut and padded to `width` cells."""
        if row is None or code is None:
            return Content(" " * width)
        number = row.new if new else row.old
        sign = row.kind if row.kind in "+-" else " "
        line = Content.assemble(Content.styled(f"{_number(number)} {sign} ", "dim"), code)
        line = line.truncate(width, ellipsis=True, pad=True)
        style = _STYLES.get(row.kind)
        return line.stylize_before(style) if style else line

    def _side_by_side(self) -> list[Content]:
        width = max((self.size.width - 3) // 2, 10)
        out: list[Content] = []
        pairs = list(zip(self.rows, self._code, strict=False))
        index = 0
        while index < len(pairs):
            row, code = pairs[index]
            if row.kind in "@!":
                out.append(code)
                index += 1
                continue
            if row.kind == " ":
                out.append(self._pair((row, code), (row, code), width))
                index += 1
                continue
            # A run of removed lines then added lines: paired up, line by line.
            removed: list[DiffSide] = []
            added: list[DiffSide] = []
            while index < len(pairs) and pairs[index][0].kind == "-":
                removed.append(pairs[index])
                index += 1
            while index < len(pairs) and pairs[index][0].kind == "+":
                added.append(pairs[index])
                index += 1
            for offset in range(max(len(removed), len(added))):
                old = removed[offset] if offset < len(removed) else (None, None)
                new = added[offset] if offset < len(added) else (None, None)
                out.append(self._pair(old, new, width))
        return out

    def _pair(self, old: DiffSide, new: DiffSide, width: int) -> Content:
        return Content.assemble(
            self._half(old[0], old[1], width, new=False),
            Content.styled(" │ ", "dim"),
            self._half(new[0], new[1], width, new=True),
        )


class FileChange(Foldable):
    """One file of /diff: `path +N −M`, its diff folded under it."""

    def __init__(self, path: str, text: str, added: int, removed: int, *, expanded: bool) -> None:
        super().__init__(expanded=expanded)
        self.path = path
        self.added = added
        self.removed = removed
        self.view = DiffView(text, path)

    def compose(self) -> ComposeResult:
        yield self.header
        yield self.view

    def _refresh_fold(self) -> None:
        self.view.display = self.expanded
        self.header.update(self.header_content())

    def header_content(self) -> Content:
        return Content.assemble(
            "▾ " if self.expanded else "▸ ",
            (safe_name(self.path), "bold"),
            "  ",
            (f"+{self.added}", "$text-success"),
            " ",
            (f"−{self.removed}", "$text-error"),
        )


FOLD_FROM = 4
"""/diff opens every file when it lists fewer than this many, else folds them all."""


class ChangeReport(Vertical):
    """/diff: every file the session changed, against its first checkpoint, one per fold."""

    DEFAULT_CSS = """
    ChangeReport {
        height: auto;
        margin: 1 0 0 0;
    }
    ChangeReport > FileChange {
        margin: 0;
    }
    """

    def __init__(self, files: list[tuple[str, str, int, int]]) -> None:
        super().__init__()
        self.files = files

    def compose(self) -> ComposeResult:
        added = sum(f[2] for f in self.files)
        removed = sum(f[3] for f in self.files)
        count = len(self.files)
        yield Static(
            Content.assemble(
                (f"{count} file{'s' if count != 1 else ''} changed this session ", "bold"),
                (f"+{added}", "$text-success"),
                " ",
                (f"−{removed}", "$text-error"),
                ("  (against its first checkpoint)", "dim"),
            )
        )
        for path, text, plus, minus in self.files:
            yield FileChange(path, text, plus, minus, expanded=count < FOLD_FROM)
