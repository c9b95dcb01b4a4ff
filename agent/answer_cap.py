"""The bound on one model call's answer and reasoning text (`agent.max_answer_mb`, H10).

A hostile or broken model can stream an answer without end; every character would be held,
rendered and stored (a 100 MB answer cost 750 MB of memory and 101 MB of state.db). Past
the bound the call ends as cut off: what came before it is kept, the rest of the stream is
never read (the response is dropped with its connection), and one sentence names the bound.
"""

from __future__ import annotations

MB = 1024 * 1024
DEFAULT_MAX_ANSWER_MB = 4.0


def cap_chars(max_answer_mb: float) -> int:
    """The bound in characters (an ASCII character is one byte of text)."""
    return int(max_answer_mb * MB)


def cut_off_sentence(what: str, max_answer_mb: float) -> str:
    """The one sentence a call cut at the bound ends with; `what` is "answer" or "reasoning"."""
    kept = "what came before it is kept" if what == "answer" else "the call was ended there"
    return (
        f"The {what} was cut off at {max_answer_mb:g} MB, the bound on one model call's "
        f"{what} (`agent.max_answer_mb`); {kept}."
    )
