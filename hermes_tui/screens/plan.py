"""The plan dialog (N1): the model's plan, approved into ask or auto-edit, or kept planning
with a note the model reads; armed like the approval dialog, so typing ahead never answers."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Input, Markdown, Static

from agent.tools.approvals import REASON_MAX_CHARS, Verdict
from hermes_tui.probes import cursor_blinks
from hermes_tui.safe_text import hidden_warning, safe_line
from hermes_tui.screens.approval import UNARMED_HINT, ApprovalScreen

PLAN_HINT = "a approve, then ask · e approve, then auto-edit · k keep planning · Esc not now"
NOTE_HINT = "Enter sends your note to the model, which keeps planning · Esc: not now"
NOT_NOW = "Esc leaves the plan unanswered: the turn ends, and you reply when you are ready."


class PlanScreen(ApprovalScreen):
    """Shows a proposed plan; dismisses with a Verdict (approved: `mode`; kept: the note)."""

    BINDINGS = [
        Binding("a", "answer('ask')", "approve, then ask", id="plan.approve_ask"),
        Binding("e", "answer('auto-edit')", "approve, then auto-edit", id="plan.approve_edit"),
        Binding("k", "answer('reason')", "keep planning", id="plan.keep"),
        Binding("escape", "answer('no')", "not now", id="plan.not_now"),
    ]
    VERDICTS = {
        "ask": Verdict(True, mode="ask"),
        "auto-edit": Verdict(True, mode="auto-edit"),
        "no": Verdict(False),
    }
    FIRST_FOCUS = "reason"

    def compose(self) -> ComposeResult:
        plan = self.request.detail
        with Vertical(id="approval-dialog", classes="dialog plan"):
            yield Static(Content.styled("The plan", "bold"), id="approval-title")
            warning = hidden_warning(plan)
            if warning is not None:
                yield Static(Content.styled(f"⚠ {warning}", "bold $warning"), id="approval-hidden")
            with VerticalScroll(id="approval-detail"):
                # The model wrote it: hidden characters are shown before Markdown renders it.
                yield Markdown(safe_line(plan), id="plan-text")
            with Horizontal(id="approval-buttons"):
                yield Button("Approve, then ask (a)", id="ask", variant="success", disabled=True)
                yield Button(
                    "Approve, then auto-edit (e)", id="auto-edit", variant="warning", disabled=True
                )
                yield Button("Keep planning (k)", id="reason", disabled=True)
            reason = Input(
                placeholder="What should the plan change? The model reads this.",
                max_length=REASON_MAX_CHARS,
                id="approval-reason",
            )
            reason.cursor_blink = cursor_blinks(self.app)
            yield reason
            yield Static(Content(UNARMED_HINT), id="approval-hint")

    def _hint(self, armed: bool) -> str:
        return f"{PLAN_HINT}\n{NOT_NOW}" if armed else UNARMED_HINT

    def _ask_reason(self) -> None:
        super()._ask_reason()
        self.query_one("#approval-hint", Static).update(Content(NOTE_HINT))
