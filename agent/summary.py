"""The summary request of a compaction: its output budget, its prompt and the transcript.

The budget comes from the window: a summary may take an eighth of it and a third of what it
replaces (C1), so it is always much smaller than the messages it stands for, and the request
that carries the transcript plus that budget fits the window (the transcript is cut to fit).
"""

from __future__ import annotations

from agent.messages import Message
from agent.models import CHARS_PER_TOKEN

SUMMARY_MIN_TOKENS = 128
"""Below this a summary cannot say much; a span this small is rarely worth compacting."""
SUMMARY_MAX_TOKENS = 2048
"""However big the window, a summary needs no more than this."""
SUMMARY_MARGIN_TOKENS = 64
"""Room left in the window for the chat template's own tokens around the transcript."""
MAX_TOOL_RESULT_CHARS = 4000
CUT_MARK = " [...]"

SUMMARY_SYSTEM_PROMPT = (
    "You summarise a conversation between a user and a coding agent so that the agent can "
    "continue the work without the original messages. Keep: the user's goals and "
    "constraints, decisions made, files read or changed (with paths), commands run and "
    "their outcomes, errors still open, and what was about to happen next. Be concise and "
    "factual; write the summary only, no preamble."
)


def summary_budget(window: int, span_tokens: int) -> int:
    """The summary request's max_tokens: an eighth of the window and a third of the span it
    replaces, within [SUMMARY_MIN_TOKENS, SUMMARY_MAX_TOKENS]. It does not follow the
    provider's `max_tokens`: that is the limit of answers, and a summary has its own."""
    return max(SUMMARY_MIN_TOKENS, min(window // 8, span_tokens // 3, SUMMARY_MAX_TOKENS))


def words_for(tokens: int) -> int:
    """About how many English words fit in `tokens` tokens (the length the prompt asks for)."""
    return max(20, tokens * 3 // 4)


def summary_system_prompt(words: int) -> str:
    """The summariser's instructions, with the length it must keep to."""
    return f"{SUMMARY_SYSTEM_PROMPT} Write at most {words} words."


def transcript_room(window: int, budget: int, system: str) -> int:
    """Characters of transcript the summary request can carry and still leave `budget`
    tokens of output in the window."""
    tokens = window - budget - SUMMARY_MARGIN_TOKENS
    chars = tokens * CHARS_PER_TOKEN - len(system)
    return max(CHARS_PER_TOKEN * SUMMARY_MIN_TOKENS, chars)


def fit(texts: list[str], limit: int) -> list[str]:
    """Cut the longest texts to one common length so that all fit in about `limit`
    characters; texts shorter than that length stay whole, a cut one ends in CUT_MARK."""
    if sum(map(len, texts)) <= limit:
        return texts
    remaining, left = limit, len(texts)
    cap = 0
    for length in sorted(map(len, texts)):
        share = remaining // left
        if length > share:
            cap = share
            break
        remaining -= length
        left -= 1
    keep = max(0, cap - len(CUT_MARK))
    return [t if len(t) <= cap else t[:keep] + CUT_MARK for t in texts]


def _entry(m: Message) -> str:
    """One message of the summarised span as plain text."""
    if m.role == "tool":
        body = m.content
        if len(body) > MAX_TOOL_RESULT_CHARS:
            body = body[:MAX_TOOL_RESULT_CHARS] + CUT_MARK
        return f"TOOL RESULT ({m.name or m.tool_call_id}):\n{body}"
    if m.role == "assistant":
        text = f"ASSISTANT:\n{m.content}" if m.content else "ASSISTANT:"
        for call in m.tool_calls:
            text += f"\n-> called {call.name}({call.arguments})"
        return text
    return f"{m.role.upper()}:\n{m.content}"


def render_transcript(
    messages: list[Message], focus: str | None = None, max_chars: int | None = None
) -> str:
    """The summarised span as plain text for the summary request, cut to `max_chars`."""
    entries = [_entry(m) for m in messages]
    if max_chars is not None:
        entries = fit(entries, max_chars)
    out = "Summarise this conversation:\n\n" + "\n\n".join(entries)
    if focus:
        out += f"\n\nFocus the summary especially on: {focus}"
    return out
