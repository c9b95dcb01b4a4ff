"""The approval modal: yes / no / always for this session, showing the command or diff."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from agent.tools.registry import ApprovalRequest
from hermes_tui.safe_text import hidden_warning, safe_line


class ApprovalScreen(ModalScreen[str]):
    """Asks whether a write or shell command may run; dismisses with yes, no or always."""

    BINDINGS = [
        Binding("y", "answer('yes')", "yes", id="approval.yes"),
        Binding("n,escape", "answer('no')", "no", id="approval.no"),
        Binding("a", "answer('always')", "always", id="approval.always"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="approval-dialog"):
            tool = safe_line(self.request.tool)
            yield Static(
                Content.assemble(("Allow ", "bold"), (tool, "bold $warning"), "?"),
                id="approval-title",
            )
            # The model wrote all of this: a hidden character is shown and named (H1, H2). The
            # summary repeats the detail's command or path, so it is counted on its own only
            # when the detail has none.
            request = self.request
            warning = hidden_warning(request.detail) or hidden_warning(request.summary)
            if warning is not None:
                yield Static(Content.styled(f"⚠ {warning}", "bold $warning"), id="approval-hidden")
            yield Static(Content(safe_line(self.request.summary)), id="approval-summary")
            with VerticalScroll(id="approval-detail"):
                yield Static(self._detail(), id="approval-detail-text")
            with Horizontal(id="approval-buttons"):
                yield Button("Yes (y)", id="yes", variant="success")
                yield Button("No (n)", id="no", variant="error")
                yield Button("Always this session (a)", id="always")

    def _detail(self) -> Content:
        """The command or diff, every hidden character shown; diff lines are coloured."""
        lines = []
        # Split on newlines only: a CR, VT or FF stays in its line, shown (␍), as the shell
        # would read it.
        for line in safe_line(self.request.detail).rstrip("\n").split("\n"):
            if line.startswith(("+++", "---")):
                lines.append(Content.styled(line, "bold"))
            elif line.startswith("+"):
                lines.append(Content.styled(line, "$success"))
            elif line.startswith("-"):
                lines.append(Content.styled(line, "$error"))
            elif line.startswith("@@"):
                lines.append(Content.styled(line, "$accent"))
            else:
                lines.append(Content(line))
        return Content("\n").join(lines)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id)

    def action_answer(self, answer: str) -> None:
        """Close the modal with `answer`."""
        self.dismiss(answer)
