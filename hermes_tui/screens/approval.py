"""The approval modal: yes / no / no with a reason / always, answered only deliberately.

Keys typed ahead must never answer it: the dialog acts on a key or a click only after it has
been on screen for APPROVAL_ARM_SECONDS with no typing in between, and every key pressed
before that restarts the wait. What is typed meanwhile goes to the composer, in order:
printable characters and pastes are inserted, Backspace deletes, and Enter is swallowed (it
would send the text unseen; it waits in the composer for the user's own Enter). One answer
key alone (a `y` pressed a moment early) is the user's answer, not text: it is held back, and
once the dialog arms it asks for that key again instead of leaving it in the composer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Button, Input, Static

from agent.tools.approvals import REASON_MAX_CHARS, Verdict
from agent.tools.registry import ApprovalRequest
from hermes_tui.probes import cursor_blinks
from hermes_tui.safe_text import hidden_warning, safe_line, safe_name
from hermes_tui.screens.dialog import DialogScreen

if TYPE_CHECKING:
    from hermes_tui.widgets.composer import Composer

APPROVAL_ARM_SECONDS = 0.5
"""How long the dialog must be on screen with no typing before a key or click answers it."""

UNARMED_HINT = "Keys are ignored for a moment: what you type goes to the input box."
ARMED_HINT = "y yes · n or Esc no · r no, with a reason"
ARMED_HINT_ALWAYS = ARMED_HINT + " · a always (above)"
ARMED_HINT_PROJECT = ARMED_HINT_ALWAYS + " · p always for this project"
AGAIN_HINT = "You pressed {key} before the dialog was ready: press {key} again. "
"""Opens the armed hint when the only key typed during the wait was one answer key."""
PROJECT_SCOPE = "Always for this project: remembered in your home folder, for every session here."
PROJECT_RULE_SCOPE = (
    "p: always for `{pattern}` in this project (the rule {rule}, kept in your home folder); "
    "a compound command never matches it."
)
PROJECT_DOMAIN_SCOPE = (
    "p: always for pages on `{pattern}` in this project (the rule {rule}, kept in your home "
    "folder); other domains still ask."
)
"""A web fetch's project rule names a host, not a command (G3): no shell words for it."""
REASON_HINT = "Enter sends your reason to the model · Esc: a plain no"

_VERDICTS = {
    "yes": Verdict(True),
    "always": Verdict(True, always=True),
    "project": Verdict(True, always=True, project=True),
    "no": Verdict(False),
}


def _parameters(binding: Binding) -> tuple[object, ...]:
    """The parameters of an `answer('x')` binding's action: ('x',)."""
    inside = binding.action.partition("(")[2].rstrip(")")
    return (inside.strip("'\""),) if inside else ()


class ApprovalScreen(DialogScreen[Verdict]):
    """Asks whether a write or shell command may run; dismisses with the user's Verdict."""

    # Its rules load with it, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    #approval-dialog {
        max-width: 100;
        max-height: 90%;
        border: thick $warning;
    }

    #approval-summary {
        color: $text-muted;
        margin: 0 0 1 0;
    }

    #approval-note {
        color: $warning;
        margin: 0 0 1 0;
    }

    #approval-detail {
        height: auto;
        max-height: 12;
        background: $boost;
    }

    #approval-buttons {
        height: auto;
        margin: 1 0 0 0;
    }

    #approval-buttons Button {
        margin: 0 1 0 0;
        min-width: 10;
    }

    #approval-always {
        margin: 1 0 0 0;
    }

    #approval-reason {
        display: none;
        margin: 1 0 0 0;
    }

    #approval-hint {
        color: $text-muted;
    }
    """

    BINDINGS = [
        Binding("y", "answer('yes')", "yes", id="approval.yes"),
        Binding("n,escape", "answer('no')", "no", id="approval.no"),
        Binding("r", "answer('reason')", "no, with a reason", id="approval.reason"),
        Binding("a", "answer('always')", "always", id="approval.always"),
        Binding("p", "answer('project')", "always for this project", id="approval.project"),
    ]
    VERDICTS = _VERDICTS
    """What each answer key dismisses the dialog with."""
    FIRST_FOCUS = "no"
    """The button focused once the dialog arms: the safe answer."""

    def __init__(
        self,
        request: ApprovalRequest,
        *,
        arm_seconds: float = APPROVAL_ARM_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        composer: Composer | None = None,
    ) -> None:
        super().__init__()
        self.request = request
        self.arm_seconds = arm_seconds
        self.armed = False
        self.asking_reason = False
        self._clock = clock
        self._composer = composer
        self._quiet_since = clock()
        self._arm_timer: Timer | None = None
        self._held: str | None = None
        """An answer key typed alone during the wait: kept out of the composer for now."""
        self._typed = False
        """Something was typed (or pasted) since the dialog last armed."""

    def compose(self) -> ComposeResult:
        with Vertical(id="approval-dialog", classes="dialog"):
            tool = safe_name(self.request.tool)
            yield Static(
                Content.assemble(("Allow ", "bold"), (tool, "bold $warning"), "?"),
                id="approval-title",
            )
            if self.request.subagent:
                # A subagent asks (G1): the user is told which, as its job was described.
                asker = safe_name(f"Asked by {self.request.subagent}")
                yield Static(Content.styled(asker, "bold $accent"), id="approval-subagent")
            # The model wrote all of this: a hidden character is shown and named (H1, H2). The
            # summary repeats the detail's command or path, so it is counted on its own only
            # when the detail has none.
            request = self.request
            warning = hidden_warning(request.detail) or hidden_warning(request.summary)
            if warning is not None:
                yield Static(Content.styled(f"⚠ {warning}", "bold $warning"), id="approval-hidden")
            yield Static(Content(safe_name(self.request.summary)), id="approval-summary")
            if request.note:
                # An MCP tool: its server, and what the server claims about it (M2).
                yield Static(Content(safe_name(request.note)), id="approval-note")
            with VerticalScroll(id="approval-detail"):
                yield Static(self._detail(), id="approval-detail-text")
            if self.request.always is not None:
                scope = safe_name(self.request.always.describe())
                if self._offers_project:
                    scope += "\n" + self._project_scope()
                yield Static(Content(scope), id="approval-always")
            with Horizontal(id="approval-buttons"):
                yield Button("Yes (y)", id="yes", variant="success", disabled=True)
                yield Button("No (n)", id="no", variant="error", disabled=True)
                yield Button("No + reason (r)", id="reason", disabled=True)
                if self.request.always is not None:
                    yield Button("Always (a)", id="always", disabled=True)
                if self._offers_project:
                    yield Button("Project (p)", id="project", disabled=True)
            reason = Input(
                placeholder="Why not? The model reads this.",
                max_length=REASON_MAX_CHARS,
                id="approval-reason",
            )
            reason.cursor_blink = cursor_blinks(self.app)
            yield reason
            yield Static(Content(UNARMED_HINT), id="approval-hint")

    def _project_scope(self) -> str:
        """What "always for this project" covers: the rule it adds, or the MCP tool."""
        rule = self.request.rule
        if not rule:
            return PROJECT_SCOPE
        tool, _, inside = rule.partition("(")
        pattern = inside.removesuffix(")")
        wording = PROJECT_DOMAIN_SCOPE if tool == "web_fetch" else PROJECT_RULE_SCOPE
        return safe_name(wording.format(pattern=pattern, rule=rule))

    @property
    def _offers_project(self) -> bool:
        return self.request.always is not None and self.request.project

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
        # The wait starts when the dialog is on screen, not when it was built.
        self._restart_wait()

    # -- arming -------------------------------------------------------------------------------
    def _restart_wait(self) -> None:
        """Disarm and start the quiet period again (the dialog opened, or the user typed)."""
        self._quiet_since = self._clock()
        self._show_armed(False)
        self._check_later(self.arm_seconds)

    def _check_later(self, delay: float | None) -> None:
        """Look at the clock again after `delay` seconds (None: stop looking)."""
        if self._arm_timer is not None:
            self._arm_timer.stop()
        self._arm_timer = None if delay is None else self.set_timer(delay, self._check_armed)

    def _check_armed(self) -> None:
        """Arm once the clock says the quiet period is over, else look again when it should be."""
        remaining = self.arm_seconds - (self._clock() - self._quiet_since)
        if remaining <= 0:
            self._check_later(None)
            self._show_armed(True)
        else:
            self._check_later(remaining)

    def _show_armed(self, armed: bool) -> None:
        """Keys and clicks act only while armed; the buttons and the hint say which it is."""
        was_armed, self.armed = self.armed, armed
        for button in self.query(Button):
            button.disabled = not armed
        hint = self._hint(armed)
        if armed:
            if self._held is not None:
                # The user's answer came too early: ask for it again, never as text (item 9).
                hint = AGAIN_HINT.format(key=self._held) + hint
            self._held, self._typed = None, False
        self.query_one("#approval-hint", Static).update(Content(hint))
        if armed and not was_armed:
            self.query_one(f"#{self.FIRST_FOCUS}", Button).focus()

    def _hint(self, armed: bool) -> str:
        """The hint line: the keys that answer, once armed."""
        if self._offers_project:
            hint = ARMED_HINT_PROJECT if armed else UNARMED_HINT
        elif self.request.always is not None:
            hint = ARMED_HINT_ALWAYS if armed else UNARMED_HINT
        else:
            hint = ARMED_HINT if armed else UNARMED_HINT
        return hint

    # -- keys ---------------------------------------------------------------------------------
    def on_key(self, event: events.Key) -> None:
        """Decide, before any binding runs, whether this key may answer the dialog."""
        if self.asking_reason:
            return  # the reason input takes the keys; it was opened deliberately
        if not self.armed:
            self._check_armed()  # the clock decides, not whether the timer has fired yet
        active = self.active_bindings.get(event.key)
        answers = active is not None and active.binding.action.startswith("answer")
        typed = event.is_printable or event.key == "backspace"
        if self.armed and not typed:
            return  # an answer key, Enter on a button, scrolling the detail
        if self.armed and answers:
            return  # y, n, r or a, pressed after a quiet moment: a deliberate answer
        if typed or answers or event.key == "enter":
            event.stop()
            event.prevent_default()
        if typed:
            lone = answers and not self._typed and event.is_printable
            self._typed = True
            if (
                lone
                and active is not None
                and self.check_action("answer", _parameters(active.binding))
            ):
                self._held = event.character
            else:
                self._release_held()  # more typing: the held key was text after all
                self._pass_to_composer(event)
        self._restart_wait()

    def on_paste(self, event: events.Paste) -> None:
        """A paste never answers: its text goes to the composer and the wait starts again."""
        if self.asking_reason:
            return
        event.stop()
        event.prevent_default()
        self._typed = True
        self._release_held()
        if self._composer is not None and event.text:
            self._composer.take_typed(event.text)
        self._restart_wait()

    def _release_held(self) -> None:
        """A held answer key turned out to start some typing: it goes to the composer first."""
        held, self._held = self._held, None
        if held is not None and self._composer is not None:
            self._composer.take_typed(held)

    def _pass_to_composer(self, event: events.Key) -> None:
        if self._composer is None:
            return
        if event.key == "backspace":
            self._composer.action_delete_left()
        elif event.character:
            self._composer.take_typed(event.character)

    # -- answers ------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "always" is not offered for a call it could not be remembered for.
        if action == "answer" and parameters == ("always",):
            return self.request.always is not None
        if action == "answer" and parameters == ("project",):
            return self._offers_project
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id is not None:
            self.action_answer(event.button.id)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(Verdict(False, reason=event.value.strip()))

    def action_answer(self, answer: str) -> None:
        """Answer with `answer` (yes, no, always) or open the reason input (reason)."""
        if self.asking_reason:
            if answer == "no":
                self.dismiss(self.VERDICTS["no"])  # Esc in the reason input: a plain no
            return
        if not self.armed:
            return  # a click or key that slipped past on_key before the quiet moment
        if answer == "reason":
            self._ask_reason()
        elif answer in self.VERDICTS and self.check_action("answer", (answer,)):
            self.dismiss(self.VERDICTS[answer])

    def _ask_reason(self) -> None:
        """The second step of a no: a short reason, typed deliberately, for the model."""
        self.asking_reason = True
        self.query_one("#approval-buttons").display = False
        for scope in self.query("#approval-always"):
            scope.display = False
        self.query_one("#approval-hint", Static).update(Content(REASON_HINT))
        reason = self.query_one("#approval-reason", Input)
        reason.display = True
        reason.focus()
