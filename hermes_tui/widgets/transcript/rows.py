"""Stored rows -> transcript widgets: exactly what was persisted, no reasoning (D3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from textual.widget import Widget

from agent.kinds import ToolOutcome
from hermes_tui.widgets.messages import UserMessage

# The widgets of stored rows (markers, notes, tool blocks and what they import) load with the
# first rows, after the first frame: an empty session's first screen has none (Z2).
if TYPE_CHECKING:
    from hermes_tui.widgets.answer import AnswerBlock
    from hermes_tui.widgets.tool_block import ToolBlock


class Note(NamedTuple):
    """The typed part of a stored text row: a compaction summary, the recovery note, or a
    turn_end hook's feedback."""

    kind: str
    """summary | recovery | hook"""
    text: str
    """The note's own text (a summary's body)."""
    rest: str
    """The row's text after the note (a summary merged into a kept message)."""
    own_row: bool
    """The note is a row of its own (a standalone summary)."""


class UserView(NamedTuple):
    """A user row as the user sees it: what they typed, and what was attached to it."""

    text: str
    attachments: tuple[Mapping[str, Any], ...] = ()


class RowReader(Protocol):
    """What the agent wrote into a stored row, in the agent's own terms."""

    def tool_summary(self, name: str, arguments: Any) -> str:
        """The one-line summary of a stored tool call."""
        ...

    def note(self, row: Mapping[str, Any]) -> Note | None:
        """The row's typed part, if it has one."""
        ...

    def user_view(self, row: Mapping[str, Any]) -> UserView | None:
        """A user row that the model read otherwise than the user typed it, else None."""
        ...


class PlainRows:
    """A RowReader that knows no agent: a call is summarised by its name, no row is typed."""

    def tool_summary(self, name: str, arguments: Any) -> str:
        """The tool's name."""
        return name

    def note(self, row: Mapping[str, Any]) -> Note | None:
        """No row is a typed note."""
        return None

    def user_view(self, row: Mapping[str, Any]) -> UserView | None:
        """Every user row is shown as stored."""
        return None


def answer_block(text: str = "") -> AnswerBlock:
    """A new answer widget; Markdown is imported on the first answer, not at start-up."""
    from hermes_tui.widgets.answer import AnswerBlock

    return AnswerBlock(text)


def stored_answer(text: str) -> AnswerBlock:
    """A stored answer's widget: a long one builds its Markdown as it nears the view (Z2)."""
    from hermes_tui.widgets.answer_chunks import is_long

    if is_long(text):
        from hermes_tui.widgets.lazy_answer import LazyAnswer

        return LazyAnswer(text)
    return answer_block(text)


def row_seq(widget: Widget) -> int | None:
    """The seq of the stored row a widget shows (None: a live row, not stored yet)."""
    return getattr(widget, "row_seq", None)


def mark_row(widget: Widget, seq: int | None) -> None:
    """Stamp `widget` with the seq of the stored row it shows (row_seq reads it back)."""
    # Any widget class can show a row, so the stamp is an attribute none of them declares.
    widget.row_seq = seq  # type: ignore[attr-defined]


class RowWidgets:
    """Builds widgets for stored rows, pairing tool calls with results from any page."""

    def __init__(self, reader: RowReader) -> None:
        self.reader = reader
        self._results: dict[str | None, Mapping[str, Any]] = {}
        # Tool blocks whose result is on a page not loaded yet.
        self._missing: dict[str, ToolBlock] = {}

    def clear(self) -> None:
        """Forget every pairing (another session, or the window reloaded)."""
        self._results.clear()
        self._missing.clear()

    def widgets(self, rows: Sequence[Mapping[str, Any]]) -> list[Widget]:
        """Widgets for stored rows, each tagged with its row's seq."""
        for row in rows:
            if row.get("role") == "tool" and not row.get("display_kind"):
                self._results[row.get("tool_call_id")] = row
                missing = self._missing.pop(row.get("tool_call_id") or "", None)
                if missing is not None and missing.state == "missing":
                    finish_from_row(missing, row)
        widgets: list[Widget] = []
        for row in rows:
            made = self._row(row)
            for widget in made:
                mark_row(widget, row.get("seq"))
            widgets.extend(made)
        return widgets

    def _row(self, row: Mapping[str, Any]) -> list[Widget]:
        kind = row.get("display_kind")
        if kind:
            from hermes_tui.widgets.markers import Marker, marker_text

            text = marker_text(kind, row.get("display_metadata"))
            return [Marker(kind, text)] if text is not None else []
        role = row.get("role")
        if role == "user":
            made, text = self._typed(row)
            view = self.reader.user_view(row)
            if view is not None:
                return [*made, UserMessage(view.text, view.attachments)]
            return made + ([UserMessage(text)] if text else [])
        if role != "assistant":
            return []
        made, text = self._typed(row)
        if text:
            made.append(stored_answer(text))
        return made + [self._tool_block(call) for call in row.get("tool_calls") or []]

    def _typed(self, row: Mapping[str, Any]) -> tuple[list[Widget], str]:
        """The row's note widget, if typed, and the text shown after it."""
        from hermes_tui.widgets.notes import RecoveryNote, SummaryBlock

        note = self.reader.note(row)
        if note is None:
            return [], row.get("content") or ""
        if note.kind == "summary":
            return [SummaryBlock(note.text)], note.rest
        if note.kind == "hook":
            return [], note.rest  # sent back by a hook: its row says so
        return [RecoveryNote()], note.rest

    def _tool_block(self, call: Mapping[str, Any]) -> ToolBlock:
        from hermes_tui.widgets.tool_block import ToolBlock

        summary = self.reader.tool_summary(call["name"], call.get("arguments"))
        block = ToolBlock(call["id"], call["name"], summary, state="missing")
        if call["id"] in self._results:
            finish_from_row(block, self._results[call["id"]])
        else:
            self._missing[call["id"]] = block
        return block


def finish_from_row(block: ToolBlock, row: Mapping[str, Any]) -> None:
    """A stored tool result: ok, error or declined and its duration when recorded, else done."""
    metadata = row.get("display_metadata")
    outcome = ToolOutcome.recorded(metadata)
    output = row.get("content") or ""
    if outcome is None or not isinstance(metadata, dict):  # recorded() reads only a dict
        block.finish("done", output)
        return
    duration = metadata.get("duration")
    if not isinstance(duration, int | float):
        duration = None
    block.finish(outcome, output, duration, metadata)
