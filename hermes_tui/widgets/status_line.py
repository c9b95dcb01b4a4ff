"""The one-line status above the composer while the status panel is hidden (f3, or a narrow
screen): the turn, the queue, the model and the context, so queued input never vanishes."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from agent.kinds import TodoStatus
from hermes_tui.content_match import same_content
from hermes_tui.safe_text import safe_line, safe_name
from hermes_tui.widgets.status_panel import (
    StatusState,
    human_count,
    mode_style,
    state_style,
    todo_progress,
)

SEPARATOR = "  ·  "


def status_line(status: StatusState, queued: int, paused: bool, queue_key: str) -> Content:
    """The line, most important first (the end is cut with an ellipsis when it is too long)."""
    state = safe_name(status.activity or status.state)  # names a tool: one row
    parts = [Content.assemble(("● ", state_style(status.state)), state)]
    if queued:
        waiting = f"queue {queued}{' paused' if paused else ''}"
        parts.append(Content.assemble((waiting, "bold $warning"), (f" ({queue_key})", "dim")))
    hint = safe_line(status.hint)
    if hint and status.hint_level == "error":
        parts.append(Content.styled(hint, "$error"))
    if status.todos:
        parts.append(_todo_part(status))
    if status.mode:
        parts.append(Content.assemble(("mode ", "dim"), (status.mode, mode_style(status.mode))))
    parts.append(Content(safe_name(status.model)))
    if status.context_window:
        share = min(1.0, status.context_used / status.context_window)
        parts.append(Content.assemble(("context ", "dim"), f"{share:.0%}"))
    tokens = f"in {human_count(status.input_tokens)} out {human_count(status.output_tokens)}"
    parts.append(Content.styled(tokens, "dim"))
    if hint and status.hint_level != "error":
        parts.append(Content.styled(hint, "$warning"))
    return Content(SEPARATOR).join(parts)


TODO_CURRENT_WIDTH = 40
"""The item in progress is cut to this many characters on the line."""


def _todo_part(status: StatusState) -> Content:
    """`todo 2/5 ▶ the item in progress` (N2)."""
    part = Content.assemble(("todo ", "dim"), todo_progress(status.todos))
    current = next((t for t, s in status.todos if s == TodoStatus.IN_PROGRESS), None)
    if current is None:
        return part
    text = safe_line(current)
    if len(text) > TODO_CURRENT_WIDTH:
        text = text[: TODO_CURRENT_WIDTH - 1] + "…"
    return Content.assemble(part, (" ▶ ", "bold $warning"), text)


class StatusLine(Widget, can_focus=False):
    """One line; `show()` gives it the status panel's state and the queue's size."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        background: $panel;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Content("")

    def show(self, status: StatusState, queued: int, paused: bool, queue_key: str) -> None:
        """Draw the state (only when it changed: the panel's state moves on every batch)."""
        content = status_line(status, queued, paused, queue_key)
        if not same_content(self._content, content):
            self._content = content
            self.refresh()

    @property
    def text(self) -> str:
        """The line as plain text (for tests and checks)."""
        return self._content.plain

    def render(self) -> Content:
        return self._content
