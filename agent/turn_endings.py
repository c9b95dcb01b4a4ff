"""How a turn ends: its result, the rows a stopped or failed turn leaves, the sentences.

The agent's one terminal path (`Agent._finish_turn`) uses these; each is a pure function
of the conversation and the result, so every way a turn can end is decided in one place
(D1: a resumed transcript shows what the live one did; T7: a failed turn's text is never
merged into a later request).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.compaction import is_summary_row
from agent.config import Config, ConfigError, ProviderConfig, split_model_ref
from agent.kinds import ErrorKind, TurnStatus
from agent.liveness import CodeSkewGuard, raised_in_own_code
from agent.messages import REQUEST_FAILED, TURN_FAILED, TURN_STOPPED, Message


@dataclass
class TurnResult:
    """How a turn ended; `unsent`: text the turn never took, to give back to the user.

    `withheld`: the text of a failed turn that no model answered; it stays in the history,
    and no later request carries it (a front end may offer it back for editing).
    """

    status: TurnStatus
    text: str = ""
    pending_steer: str | None = None
    error: str | None = None
    session_id: str | None = None
    unsent: str | None = None
    withheld: str | None = None
    error_kind: ErrorKind | None = None


def unanswered(messages: list[Message], first: Message | None) -> list[Message]:
    """The failed turn's user messages no model answered, newest first: from the end of the
    conversation back to `first`, the turn's own message (found by identity: a compaction
    may have moved it). Empty when `first` is not among them: nothing to withhold."""
    found: list[Message] = []
    for message in reversed(messages):
        if message.is_display or message.ephemeral:
            continue
        if message.role != "user" or is_summary_row(message):
            break  # C5: a row that carries a compaction summary is never withheld
        found.append(message)
        if message is first:
            return found
    return []


def ending_row(result: TurnResult, stopped: bool, last: Message | None) -> Message | None:
    """The display row a stopped or failed turn leaves (D1), or None (it ended well, or the
    failure says itself already: a `request_failed` row, a store that cannot save it)."""
    if result.status == TurnStatus.STOPPED or (result.status == TurnStatus.OK and stopped):
        return Message("assistant", display_kind=TURN_STOPPED, display_metadata={})
    failed = result.status in (TurnStatus.ERROR, TurnStatus.CAPPED)
    if not failed or result.error_kind == ErrorKind.STORAGE:
        return None
    if last is not None and last.display_kind == REQUEST_FAILED:
        return None
    meta = {"error": result.error or "", "kind": result.error_kind or ""}
    return Message("assistant", display_kind=TURN_FAILED, display_metadata=meta)


def internal_error(exc: Exception, skew_guard: CodeSkewGuard) -> str:
    """The sentence for a bug; an AttributeError in our own code points at an upgrade (L4)."""
    if isinstance(exc, AttributeError) and raised_in_own_code(exc):
        skew = skew_guard.skew_message()
        if skew is not None:
            return skew
        return (
            f"hermes-tui hit an internal AttributeError ({exc}), which usually means its "
            "code changed while running: restart to continue."
        )
    return f"Internal error: {type(exc).__name__}: {exc}"


def cut_off_before_answer(name: str, provider: ProviderConfig, reasoned: bool) -> str:
    """The sentence for an output limit reached before any text or tool call, with the fix."""
    limit = f" (now {provider.max_tokens})" if provider.max_tokens else ""
    fix = f"raise `providers.{name}.max_tokens`{limit}"
    if provider.thinking_budget:
        fix += f" or lower `providers.{name}.thinking_budget` ({provider.thinking_budget})"
    if reasoned:
        what = "The model used its whole output budget thinking and wrote no answer"
    else:
        what = "The answer was cut off at the model's output limit before it began"
    return f"{what}: {fix}, then ask again."


def budget_spent(max_iterations: int) -> str:
    """The sentence for a turn that spent its iteration budget."""
    return (
        f"Stopped: the iteration budget ({max_iterations} model calls) is spent. "
        "Send a message to let the agent continue."
    )


def unknown_model(config: Config, model: str | None) -> str | None:
    """Why `model` cannot run a turn (not provider:model, or no such provider), or None."""
    if model is None:
        return None
    try:
        config.provider(split_model_ref(model)[0])
    except ConfigError as exc:
        return str(exc)
    return None


def refusal(
    skew_guard: CodeSkewGuard, missing_key: str | None, unknown: str | None
) -> TurnResult | None:
    """The result of a turn that cannot start: the code changed under the running app (L4),
    a hosted provider without a key (never a silent demo), or a model no provider serves."""
    skew = skew_guard.skew_message()
    if skew is not None:
        return TurnResult(TurnStatus.ERROR, error=skew, error_kind=ErrorKind.UPGRADED)
    for problem in (missing_key, unknown):
        if problem is not None:
            return TurnResult(TurnStatus.ERROR, error=problem, error_kind=ErrorKind.CONFIG)
    return None
