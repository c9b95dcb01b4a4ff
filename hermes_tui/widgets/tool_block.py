"""The tool block: tool name, one-line arguments, state, duration, foldable capped output."""

from __future__ import annotations

from textual.content import Content

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


def format_duration(seconds: float) -> str:
    """A short duration: 0.0s, 12.3s, 2m05s."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


class ToolBlock(Foldable):
    """One tool call: awaiting approval or running, then ok, error or declined; Enter or a
    click shows the output."""

    def __init__(self, call_id: str, name: str, summary: str, state: str = "running") -> None:
        super().__init__(classes=f"-{state}")
        self.call_id = call_id
        self.tool_name = name
        self.summary = summary
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
        self.body.update(Content(cap_output(output)))
        if self.is_mounted:
            self._refresh_fold()

    def has_body(self) -> bool:
        return bool(self.output)

    def header_content(self) -> Content:
        arrow = ("▾" if self.expanded else "▸") if self.output else " "
        summary = self.summary
        if summary.startswith(self.tool_name):
            summary = summary[len(self.tool_name) :].strip()
        duration = f" [dim]{format_duration(self.duration)}[/]" if self.duration is not None else ""
        return Content.assemble(
            f"{arrow} ",
            (self.tool_name, "bold"),
            " ",
            (summary, "dim"),
            "  ",
            Content.from_markup(_STATE_MARKUP[self.state] + duration),
        )
