"""The rewind picker: the session's messages, what changed after each, and what to restore.

Step one lists the user's messages, newest first, each with the files changed after it;
Enter picks one. Step two offers: code and conversation, conversation only, code only, or
a fork of the session from there. Escape goes back a step, then closes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.text_cuts import cut_with_ellipsis
from hermes_tui.safe_text import safe_line, safe_name
from hermes_tui.screens.dialog import DialogScreen

ACTIONS = (
    ("both", "Restore code and conversation"),
    ("conversation", "Restore conversation only (later messages kept as a branch)"),
    ("code", "Restore code only"),
    ("fork", "Fork a new session from here"),
)
TEXT_CHARS = 60


@dataclass(frozen=True)
class RewindPoint:
    """A user message to rewind to, and what changed after it."""

    message_id: int
    seq: int
    text: str
    files: tuple[str, ...] = ()
    shell: bool = False

    def changed(self) -> str:
        """What changed after it, in a few words."""
        parts = []
        if self.files:
            count = len(self.files)
            names = ", ".join(short_name(name, 30) for name in self.files[:3])
            more = " …" if count > 3 else ""
            parts.append(f"{count} file{'s' if count > 1 else ''} changed after: {names}{more}")
        if self.shell:
            parts.append("shell commands or MCP tools ran")
        return " · ".join(parts) or "no file changed after"


@dataclass(frozen=True)
class RewindChoice:
    """What the user picked: the message and the action (both, conversation, code, fork)."""

    point: RewindPoint
    action: str


def one_line(text: str, width: int = TEXT_CHARS) -> str:
    """Outside text on one line, every hidden character shown, cut to `width`."""
    return cut_with_ellipsis(" ".join(safe_line(text).split()), width)


def short_name(name: str, width: int) -> str:
    """A file's name on one row, its newlines and hidden characters shown, cut to `width`."""
    shown = safe_name(name)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


_DIALOG_CSS = """
    #rewind-dialog {
        max-width: 90;
        max-height: 90%;
    }

    #rewind-list {
        height: auto;
        max-height: 20;
        border: none;
        margin: 1 0;
    }
"""
"""The dialog box both screens here draw: the rewind picker and the conflict question."""


class RewindScreen(DialogScreen[RewindChoice | None]):
    """Picks a message of the session and what to restore to before it."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = _DIALOG_CSS

    BINDINGS = [Binding("escape", "back", "back", id="rewind.back")]

    def __init__(self, points: list[RewindPoint]) -> None:
        super().__init__()
        self.points = points
        self.picked: RewindPoint | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind-dialog", classes="dialog"):
            yield Static(Content.styled("Rewind to before…", "bold"), id="rewind-title")
            yield OptionList(*self._message_options(), id="rewind-list")
            yield Static(Content.styled("enter picks · escape goes back", "dim"), id="rewind-hint")

    def _message_options(self) -> list[Option]:
        return [
            Option(
                Content.assemble(
                    (f"“{one_line(point.text)}”", "bold"), "\n  ", (point.changed(), "dim")
                ),
                id=str(index),
            )
            for index, point in enumerate(self.points)
        ]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.picked is None:
            self.picked = self.points[int(event.option.id or 0)]
            options = event.option_list
            options.clear_options()
            options.add_options(Option(label, id=action) for action, label in ACTIONS)
            options.highlighted = 0
            title = self.query_one("#rewind-title", Static)
            title.update(
                Content.assemble(("Before ", "bold"), (f"“{one_line(self.picked.text)}”", "bold"))
            )
            return
        self.dismiss(RewindChoice(self.picked, event.option.id or ""))

    def action_back(self) -> None:
        """Back to the messages from the actions; close from the messages."""
        if self.picked is None:
            self.dismiss(None)
            return
        self.picked = None
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._message_options())
        options.highlighted = 0
        self.query_one("#rewind-title", Static).update(Content.styled("Rewind to before…", "bold"))


class ConflictScreen(DialogScreen[bool]):
    """Files changed outside the agent since the checkpoint: keep them (default) or not."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = _DIALOG_CSS

    BINDINGS = [
        Binding("escape,k,enter", "answer(False)", "keep them", id="conflict.keep"),
        Binding("o", "answer(True)", "overwrite them", id="conflict.overwrite"),
    ]

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        shown = self.paths[:12]
        more = len(self.paths) - len(shown)
        lines = [Content(f"  {safe_name(path)}") for path in shown]
        if more > 0:
            lines.append(Content.styled(f"  … and {more} more", "dim"))
        with Vertical(id="rewind-dialog", classes="dialog"):
            yield Static(
                Content.styled("Changed outside the agent since the checkpoint:", "bold $warning")
            )
            yield Static(Content("\n").join(lines))
            yield Static(
                Content.styled(
                    "enter or k keeps them as they are · o overwrites them with the checkpoint",
                    "dim",
                )
            )

    def action_answer(self, overwrite: bool) -> None:
        """Keep the outside edits (False) or overwrite them too (True)."""
        self.dismiss(overwrite)


def points_of(
    rows: Sequence[Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]]
) -> list[RewindPoint]:
    """The user's messages of a session, newest first, with what changed after each."""
    users = [
        row
        for row in rows
        if row.get("role") == "user" and not row.get("display_kind") and row.get("id") is not None
    ]
    turns = [c for c in checkpoints if c.get("kind", "turn") == "turn" and not c.get("undone")]
    points = []
    for row in users:
        later = [c for c in turns if (c.get("message_id") or 0) >= row["id"]]
        files = sorted({path for c in later for path in (c.get("paths") or {})})
        points.append(
            RewindPoint(
                row["id"],
                row["seq"],
                row.get("content") or "",
                tuple(files),
                any(c.get("shell") for c in later),
            )
        )
    return points[::-1]
