"""The tool block: tool name, one-line arguments, state, duration, foldable capped output."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.app import ComposeResult
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from agent.kinds import IMAGES_KEY
from hermes_tui.durations import format_duration
from hermes_tui.probes import probe
from hermes_tui.safe_text import safe_name, safe_output, safe_text
from hermes_tui.widgets.diff_view import DiffView
from hermes_tui.widgets.foldable import Foldable
from hermes_tui.widgets.messages import chips, image_attachment
from hermes_tui.widgets.subagent_line import SubagentActivity

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


def change_of(display: Mapping[str, Any] | None) -> tuple[str, str, int, int] | None:
    """(path, diff text, lines added, lines removed) of a file change's display metadata."""
    diff = (display or {}).get("diff")
    if not isinstance(diff, Mapping):
        return None
    path, text = diff.get("path"), diff.get("text")
    added, removed = diff.get("added"), diff.get("removed")
    if not (isinstance(path, str) and isinstance(text, str)):
        return None
    if not (isinstance(added, int) and isinstance(removed, int)):
        return None
    return path, text, added, removed


def plan_of(display: Mapping[str, Any] | None) -> str | None:
    """The Markdown of a propose_plan result's plan (its display metadata), or None (N1)."""
    plan = (display or {}).get("plan")
    text = plan.get("text") if isinstance(plan, Mapping) else None
    return text if isinstance(text, str) and text.strip() else None


class ToolBlock(Foldable):
    """One tool call: awaiting approval or running, then ok, error or declined; Enter or a
    click shows the output. A file change shows `+N −M` folded and its diff open (X1); a
    proposed plan shows as Markdown, open (N1)."""

    def __init__(self, call_id: str, name: str, summary: str, state: str = "running") -> None:
        super().__init__(classes=f"-{state}")
        self.call_id = call_id
        # The model names the tool and writes its arguments: shown exactly on one row, hidden
        # parts and line breaks too (a path `a\nb` never reads as `a b`).
        self.tool_name = safe_name(name)
        self.summary = safe_name(summary)
        self.state = state
        self.duration: float | None = None
        self.output = ""
        self.change: tuple[str, str, int, int] | None = None
        self.diff_view: DiffView | None = None
        self.subagent: SubagentActivity | None = None
        """A `task` call's subagent: what it does while it runs, what it did (G1)."""
        self.plan_view: Widget | None = None
        self.images: list[dict[str, Any]] = []
        """The images the result carries to the model (an MCP tool's, G4), as chips."""
        self.image_chips: Static | None = None

    def compose(self) -> ComposeResult:
        yield self.header
        if self.image_chips is not None:
            yield self.image_chips
        yield self.body
        if self.diff_view is not None:
            yield self.diff_view
        if self.plan_view is not None:
            yield self.plan_view

    def set_state(self, state: str) -> None:
        """Show a state before the result: awaiting approval, then running."""
        self.remove_class(f"-{self.state}")
        self.state = state
        self.add_class(f"-{state}")
        if self.is_mounted:
            self._refresh_fold()

    def show_subagent(self, tool: str, tool_calls: int, tokens: int) -> None:
        """The `task` call's subagent now: the tool it runs, its calls and tokens (G1)."""
        self.subagent = SubagentActivity(tool, tool_calls, tokens)
        if self.is_mounted:
            self.refresh_header()

    def finish(
        self,
        state: str,
        output: str,
        duration: float | None = None,
        display: Mapping[str, Any] | None = None,
    ) -> None:
        """Record the result: ok, error or declined; done for an old stored result (no outcome).

        `display` may carry the file change the call made: then the diff is the body, open.
        """
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
        self.change = change_of(display)
        self.subagent = SubagentActivity.of(display) or self.subagent
        self._show_images(display)
        if self.change is not None and self.diff_view is None:
            path, text, _added, _removed = self.change
            self.diff_view = DiffView(text, path)
            self.set_reactive(ToolBlock.expanded, True)
            if self.is_mounted:
                self.mount(self.diff_view)
        plan = plan_of(display)
        if plan is not None and self.plan_view is None:
            from hermes_tui.widgets.answer import AnswerBlock  # Markdown: not at start-up

            # The plan as the model wrote it, rendered, live and on resume alike.
            self.plan_view = AnswerBlock(safe_text(plan))  # outside text (H1)
            self.set_reactive(ToolBlock.expanded, True)
            if self.is_mounted:
                self.mount(self.plan_view)
        if self.is_mounted:
            self._refresh_fold()

    def _show_images(self, display: Mapping[str, Any] | None) -> None:
        """Chips under the header for the result's images: seen folded, not only as a note."""
        refs = (display or {}).get(IMAGES_KEY)
        if not isinstance(refs, list) or not refs or self.image_chips is not None:
            return
        self.images = [image_attachment(ref) for ref in refs if isinstance(ref, Mapping)]
        self.image_chips = Static(chips(self.images), classes="tool-images")
        if self.is_mounted:
            self.mount(self.image_chips, after=self.header)

    def _refresh_fold(self) -> None:
        super()._refresh_fold()
        if self.diff_view is not None:
            # The diff stands for the output, which says no more than its header does.
            self.body.display = False
            self.diff_view.display = self.expanded
        if self.plan_view is not None:
            # The plan stands for the output (which only repeats the user's answer to it).
            self.body.display = False
            self.plan_view.display = self.expanded

    def has_body(self) -> bool:
        return bool(self.output) or self.diff_view is not None or self.plan_view is not None

    def _shown_duration(self, duration: float) -> float:
        """The duration to show: as measured, unless the app's probes fix it (snapshots)."""
        try:
            app = self.app
        except RuntimeError:  # no app running (Textual's NoActiveAppError): as measured
            return duration
        shown = probe(app, "tool_duration")
        return duration if shown is None else shown(duration)

    def header_content(self) -> Content:
        arrow = ("▾" if self.expanded else "▸") if self.has_body() else " "
        summary = self.summary
        if summary.startswith(self.tool_name):
            summary = summary[len(self.tool_name) :].strip()
        duration = ""
        if self.duration is not None:
            duration = (
                f" [dim]{format_duration(self._shown_duration(self.duration), tenths=True)}[/]"
            )
        counts = Content("")
        if self.change is not None:
            _path, _text, added, removed = self.change
            counts = Content.assemble(
                "  ", (f"+{added}", "$text-success"), " ", (f"−{removed}", "$text-error")
            )
        if self.subagent is not None:
            counts = self.subagent.content(self.state in ("running", "awaiting"))
        return Content.assemble(
            f"{arrow} ",
            (self.tool_name, "bold"),
            " ",
            (summary, "dim"),
            "  ",
            Content.from_markup(_STATE_MARKUP[self.state] + duration),
            counts,
        )
