"""What a hook's run says, read the way Claude Code's hooks answer (N4).

Exit 0 is "ok": stdout may be a JSON object with `decision` (allow, deny or ask before a
tool; block, also spelt deny, for the other events), `reason`, `additional_context` and
`message` (a line for the user's row); plain stdout is context for the model. Exit 2 is
"no": stderr (else stdout) is the reason the model, or the user for a prompt, reads. Any
other exit, a timeout, a crash or stdout that starts like JSON but is not is a hook error:
shown, never blocking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from agent.hooks.process import HookRun

BLOCKING_EXIT = 2


class Decision(StrEnum):
    """What a hook decided; NONE when it only ran (or added context)."""

    NONE = ""
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


_DECISIONS = {
    "before_tool": {"allow": Decision.ALLOW, "deny": Decision.DENY, "ask": Decision.ASK},
    "default": {"block": Decision.DENY, "deny": Decision.DENY},
}
"""The decisions each event takes; `approve`/`continue` and the like are errors, not guesses."""


@dataclass(frozen=True)
class HookAnswer:
    """A run read: its decision, the reason, context for the model, a line for the user, or
    the error that made it a failed run."""

    decision: Decision = Decision.NONE
    reason: str = ""
    context: str = ""
    message: str = ""
    error: str = ""


def answer_of(run: HookRun, event: str, timeout: float) -> HookAnswer:
    """Read `run` of a hook on `event` (one with `timeout` seconds)."""
    if run.failed_to_start:
        return HookAnswer(error=f"could not start ({run.failed_to_start})")
    if run.stopped:
        return HookAnswer(error="stopped with the turn")
    if run.timed_out:
        return HookAnswer(error=f"timed out after {timeout:g} s (killed)")
    if run.exit_code == BLOCKING_EXIT:
        reason = run.stderr.strip() or run.stdout.strip() or "a hook said no (exit 2)"
        return HookAnswer(Decision.DENY, reason=reason)
    if run.exit_code != 0:
        detail = first_line(run.stderr) or first_line(run.stdout)
        died = f"exit {run.exit_code}" if (run.exit_code or 0) > 0 else _signal(run.exit_code)
        return HookAnswer(error=f"failed ({died}{': ' + detail if detail else ''})")
    return _ok_answer(run.stdout, event)


def _ok_answer(stdout: str, event: str) -> HookAnswer:
    text = stdout.strip()
    if not text.startswith("{"):
        return HookAnswer(context=text)
    try:
        data = json.loads(text)
    except ValueError:
        return HookAnswer(error="its stdout starts like JSON but is not a JSON object")
    if not isinstance(data, dict):
        return HookAnswer(error="its stdout is not a JSON object")
    said = data.get("decision") or ""
    decisions = _DECISIONS.get(event, _DECISIONS["default"])
    if said and (not isinstance(said, str) or said.lower() not in decisions):
        known = ", ".join(decisions)
        return HookAnswer(error=f"its decision {said!r} is not one of {known}")
    context = data.get("additional_context", data.get("additionalContext", ""))
    message = data.get("message", data.get("systemMessage", ""))
    return HookAnswer(
        decisions[said.lower()] if said else Decision.NONE,
        reason=_text(data.get("reason")),
        context=_text(context),
        message=_text(message),
    )


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def first_line(text: str) -> str:
    """The first line of `text` that is not blank, stripped ("" for none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _signal(code: int | None) -> str:
    import signal

    try:
        return f"killed by {signal.Signals(-(code or 0)).name}"
    except ValueError:
        return f"exit {code}"
