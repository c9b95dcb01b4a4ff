"""What the copy key copies (U3): source text, never the wrapped, indented screen rendering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.widget import Widget

from hermes_tui.widgets.messages import UserMessage

if TYPE_CHECKING:
    from textual.widgets.markdown import MarkdownFence


@dataclass(frozen=True, slots=True)
class Clip:
    """Text to put on the clipboard and how the notice names it."""

    text: str
    what: str


def fence_under(widget: Widget | None) -> MarkdownFence | None:
    """The code block `widget` is part of (the mouse may be over its label), if any."""
    from textual.widgets.markdown import MarkdownFence

    while widget is not None:
        if isinstance(widget, MarkdownFence):
            return widget
        parent = widget.parent
        widget = parent if isinstance(parent, Widget) else None
    return None


def clip_for(pointed: Widget | None, selected: Widget | None, rows: list[Widget]) -> Clip | None:
    """The code block under the pointer, else the selected message, else the last answer."""
    from hermes_tui.widgets.answer import AnswerBlock

    fence = fence_under(pointed)
    if fence is not None:
        return Clip(fence.code.rstrip("\n"), "code block")
    if isinstance(selected, AnswerBlock):
        return Clip(selected.source.strip("\n"), "answer")
    if isinstance(selected, UserMessage):
        return Clip(selected.text, "message")
    for widget in reversed(rows):
        if isinstance(widget, AnswerBlock) and widget.source.strip():
            return Clip(widget.source.strip("\n"), "last answer")
    return None
