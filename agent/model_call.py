"""One model call: stream it into a Draft, and retry what retrying can fix (W8-W11).

`stream_into` is the streaming hot path: one clock touch, one abort check and one type test
per part. `call_model` wraps it in the retry loop; what is retried is decided by the
classified `ProviderError` (`retryable`, `max_attempts`, `retry_after`), never by the SDK.
Every attempt is accounted: by the server's usage when it sent one, else (stopped, dropped,
failed mid-stream) by the estimate `estimate` makes of it, marked estimated (S2-S7).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator

from agent import events as ev
from agent.answer_cap import DEFAULT_MAX_ANSWER_MB, cap_chars, cut_off_sentence
from agent.config import AgentSettings
from agent.control import TurnControl
from agent.drafts import Draft
from agent.kinds import ErrorKind
from agent.messages import ThinkingBlock
from agent.providers.base import (
    Abort,
    ChatRequest,
    FinishPart,
    Provider,
    ReasoningPart,
    StreamPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UsagePart,
)
from agent.providers.errors import ProviderError, summarize

log = logging.getLogger("hermes_tui.agent")

MAX_BACKOFF_SECONDS = 60.0


def backoff_delay(attempt: int, base: float, retry_after: float | None) -> float:
    """Exponential backoff with jitter, never shorter than Retry-After (W8)."""
    delay = base * (2.0 ** (attempt - 1))
    delay = min(delay, MAX_BACKOFF_SECONDS) * (0.5 + random.random() / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def stream_into(
    draft: Draft,
    parts: Iterator[StreamPart],
    abort: Abort,
    sink: ev.Sink,
    touch: Callable[[], None],
    on_usage: Callable[[UsagePart], None],
    max_answer_mb: float = DEFAULT_MAX_ANSWER_MB,
) -> None:
    """Read a call's parts into `draft`, emitting the deltas; closes `parts` when it ends.

    Answer text and reasoning stop at `max_answer_mb` each (H10): the part that crosses it
    is cut there, the call ends as cut off (`draft.capped` says so) and nothing more is read.
    """
    cap = cap_chars(max_answer_mb)
    try:
        for part in parts:
            touch()
            if abort.fired:
                # Belt and braces: even when no socket could be shut down, stop reading.
                break
            if type(part) is TextPart:
                text = part.text
                draft.text_chars += len(text)
                over = draft.text_chars - cap
                if over > 0:
                    text = text[: len(text) - over]
                    draft.text_chars = cap
                    draft.capped = cut_off_sentence("answer", max_answer_mb)
                if text:
                    draft.text.append(text)
                    draft.produced = True
                    sink(ev.TextDelta(text))
                if over > 0:
                    draft.finish = "length"
                    break
            elif type(part) is ReasoningPart:
                text = part.text
                draft.produced = True
                draft.reasoning_chars += len(text)
                over = draft.reasoning_chars - cap
                if over > 0:
                    text = text[: len(text) - over]
                    draft.reasoning_chars = cap
                if text:
                    sink(ev.ReasoningDelta(text))
                if over > 0:
                    draft.capped = cut_off_sentence("reasoning", max_answer_mb)
                    draft.finish = "length"
                    break
            elif type(part) is ToolCallPart:
                if draft.add_call_part(part):
                    sink(ev.ToolCallDelta(part.index, part.name or ""))
            elif type(part) is ThinkingPart:
                # Only complete, signed blocks are kept, and only for this turn (A7).
                if part.signature or part.redacted_data:
                    draft.thinking.append(
                        ThinkingBlock(part.thinking, part.signature, part.redacted_data)
                    )
            elif type(part) is UsagePart:
                draft.usage = part
                on_usage(part)
            elif type(part) is FinishPart:
                draft.finish = part.reason
    finally:
        # Closed here, on the worker's own thread, the moment the loop ends (a stop's break
        # included): the stream's cleanup releases its connection now rather than whenever
        # the generator happens to be collected (W5).
        close = getattr(parts, "close", None)
        if close is not None:
            close()


def attempts_for(
    exc: ProviderError, attempts: int, provider: Provider, settings: AgentSettings
) -> int:
    """How many attempts this call may take after `exc`; 0 when retrying cannot help.

    A stall (W9) starts one cumulative deadline for the call's retries; once it passed, a
    further stall is final.
    """
    if exc.kind == ErrorKind.TIMEOUT:
        if provider.call_deadline is None:
            idle = settings.stream_idle_timeout_seconds
            provider.call_deadline = time.monotonic() + idle
        if time.monotonic() >= provider.call_deadline:
            return 0
    if not exc.retryable:
        return 0
    return min(attempts, exc.max_attempts or attempts)


def call_model(
    provider: Provider,
    request: Callable[[], ChatRequest],
    control: TurnControl,
    settings: AgentSettings,
    *,
    started: ev.RequestStarted,
    sink: ev.Sink,
    touch: Callable[[], None],
    on_usage: Callable[[UsagePart], None],
    estimate: Callable[[Draft], UsagePart],
    before_send: Callable[[ChatRequest], None] | None = None,
) -> Draft:
    """One model call with retries (W8-W11); returns what streamed, partial on abort.

    `before_send` sees each attempt's request before it is sent and may refuse it by
    raising (a spend cap, $2): then nothing is sent and no RequestStarted is told.

    Returns an empty Draft at once when a stop or a redirect is waiting; raises the
    ProviderError that cannot be retried, or the last one when the attempts are spent.
    An attempt that streamed output but got no usage from the server (llama.cpp sends it
    only in its last chunk) goes to `on_usage` as `estimate(draft)`; one that streamed
    nothing (refused with an error status, never connected, stopped before its first token)
    is not a billed call.
    """
    attempts = max(1, settings.max_retries)
    attempt = 0
    # W9: after a first stall, every retry of this call shares one more idle period.
    provider.call_deadline = None
    while True:
        attempt += 1
        abort = control.new_call()
        if abort is None:
            return Draft()
        built = request()
        if before_send is not None:
            before_send(built)
        draft = Draft()
        sink(started)
        try:
            parts = provider.stream(built, abort)
            stream_into(draft, parts, abort, sink, touch, on_usage, settings.max_answer_mb)
            return draft
        except ProviderError as exc:
            account(draft, on_usage, estimate)  # before the retry's events
            if abort.fired:
                return draft
            most = attempts_for(exc, attempts, provider, settings)
            if attempt >= most:
                raise
            if exc.rotated:
                delay = 0.0  # K1: the pool moved to another usable key
            else:
                delay = backoff_delay(attempt, settings.retry_base_seconds, exc.retry_after)
            log.info("retrying after %s (%d/%d)", exc.kind, attempt, most)
            if draft.produced:
                sink(ev.StreamReset(summarize(exc)))
            sink(ev.Retrying(attempt + 1, most, delay, summarize(exc)))
            if control.wait_for_stop(delay):
                return draft
        finally:
            account(draft, on_usage, estimate)


def account(
    draft: Draft,
    on_usage: Callable[[UsagePart], None],
    estimate: Callable[[Draft], UsagePart],
) -> None:
    """An attempt that streamed but got no usage from the server is accounted by estimate."""
    if draft.usage is None and draft.produced:
        draft.usage = estimate(draft)
        on_usage(draft.usage)
