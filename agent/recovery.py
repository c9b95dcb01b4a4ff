"""Resuming a session whose previous process died mid-turn (SPEC S8, D3, D4).

A turn persists each message as it completes, so after a crash the stored history ends in
one of three ways that a finished turn never leaves: a user message with no answer, a tool
result with no answer after it, or an assistant message whose tool calls have no results.

The recovery note is a *user* message: the model must see it and the user sees it in the
transcript, so it cannot be a display row (display rows are stripped from every payload,
D1). Its type rides in `display_metadata` ({"note_kind": "recovery"}) with `display_kind`
None: the column exists on every row, the stores and projections already carry it, and it is
set when the Message is built, so the one INSERT that persists the note carries its type
(D4). No provider projection ever reads display_metadata.
"""

from __future__ import annotations

from agent.messages import Message, ToolCall, model_visible

NOTE_KIND_KEY = "note_kind"
RECOVERY_NOTE_KIND = "recovery"

RECOVERY_NOTE = (
    "[hermes-tui: the previous run of this session stopped before the turn finished (the "
    "process ended). Everything above was saved as it happened. Continue the task from where "
    "it stopped; re-run a tool only if its result is missing or marked interrupted.]"
)

INTERRUPTED_TOOL_RESULT = (
    "Interrupted: hermes-tui stopped before this tool call finished; its result is unknown."
)


def note_kind(message: Message) -> str | None:
    """The type of a typed user note (e.g. "recovery"), or None for ordinary messages."""
    meta = message.display_metadata
    if message.display_kind is None and isinstance(meta, dict):
        kind = meta.get(NOTE_KIND_KEY)
        return kind if isinstance(kind, str) else None
    return None


def note_metadata(kind: str) -> dict[str, str]:
    """display_metadata for a typed, model-visible user note."""
    return {NOTE_KIND_KEY: kind}


def unanswered_calls(messages: list[Message]) -> list[ToolCall]:
    """Tool calls of the last assistant message that have no tool result after them."""
    visible = model_visible(messages)
    for index in range(len(visible) - 1, -1, -1):
        message = visible[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in visible[index + 1 :] if m.role == "tool"}
            return [c for c in message.tool_calls if c.id not in answered]
        if message.role == "user":
            return []
    return []


def interrupted(messages: list[Message]) -> bool:
    """True when the stored history ends mid-turn (the process died before the answer)."""
    visible = [m for m in model_visible(messages) if m.role != "system"]
    if not visible:
        return False
    last = visible[-1]
    if last.role in ("user", "tool"):
        return True
    return bool(unanswered_calls(messages))
