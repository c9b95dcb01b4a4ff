"""The tool block: tool name, one-line arguments, state, duration, foldable capped output."""

from __future__ import annotations

from textual.content import Content

from hermes_tui.durations import format_duration
from hermes_tui.safe_text import safe_line, safe_output
from hermes_tui.widgets.foldable import Foldable

OUTPUT_CAP_CHARS = 4000
OUTPUT_CAP_LINES = 40

_STATE_MARKUP = {
    "awaiting": "[$accent]◌ awaiting approval[/]",
    "running": "[$warning]● running[/]",
    "ok": "[$success]✓ ok[/]",
    "error": "[$error]✗ error[/]",
    "declined": "[$text-warning]⊘ declined[/]",
    "done": "[$success]✓[/]",
    "missing": "[dim]no result[/]",
}


def cap_output(output: str) -> str:
    """Keep the head of the output within the display caps, saying how much was cut."""
    lines = output.splitlines()
    cut_lines = len(lines) > OUTPUT_CAP_LINES
    text = "\n".join(lines[:OUTPUT_CAP_LINES]) if cut_lines else output
    if len(text) > OUTPUT_CAP_CHARS:
        text = text[:OUTPUT_CAP_CHARS]
        cut_lines = True
    if cut_lines:
        text += f"\n… ({len(output) - len(text)} more characters)"
    return text


class ToolBlock(Foldable):
    """One tool call: awaiting approval or running, then ok, error or declined; Enter or a
    click shows the output."""

    def __init__(self, call_id: str, name: str, summary: str, state: str = "running") -> None:
        super().__init__(classes=f"-{state}")
        self.call_id = call_id
        # The model names the tool and writes its arguments: shown exactly, hidden parts too.
        self.tool_name = safe_line(name)
        self.summary = safe_line(summary)
        self.state = state
        self.duration: float | None = None
        self.output = ""

    def set_state(self, state: str) -> None:
        """Show a state before the result: awaiting approval, then running."""
        self.remove_class(f"-{self.state}")
        self.state = state
        self.add_class(f"-{state}")
        if self.is_mounted:
            self._refresh_fold()

    def finish(self, state: str, output: str, duration: float | None = None) -> None:
        """Record the result: ok, error or declined; done for an old stored result (no outcome)."""
        self.remove_class(f"-{self.state}")
        self.state = state
        self.add_class(f"-{state}")
        # Nothing ran after a no: a duration would only be the time it took to say it.
        self.duration = None if state == "declined" else duration
        self.output = output
        self.body.update(Content(safe_output(cap_output(output))))
        if state == "error" and output:
            # A failure shows its error without a click (issue 17).
            self.set_reactive(ToolBlock.expanded, True)
        if self.is_mounted:
            self._refresh_fold()

    def has_body(self) -> bool:
        return bool(self.output)

    def header_content(self) -> Content:
        arrow = ("▾" if self.expanded else "▸") if self.output else " "
        summary = self.summary
        if summary.startswith(self.tool_name):
            summary = summary[len(self.tool_name) :].strip()
        duration = ""
        if self.duration is not None:
            duration = f" [dim]{format_duration(self.duration, tenths=True)}[/]"
        return Content.assemble(
            f"{arrow} ",
            (self.tool_name, "bold"),
            " ",
            (summary, "dim"),
            "  ",
            Content.from_markup(_STATE_MARKUP[self.state] + duration),
        )
