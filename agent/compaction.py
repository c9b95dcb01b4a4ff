"""Context compaction that never drops history (SPEC C1-C7).

`ContextCompressor` decides when to compact (estimate against the model's window, cooldown
ladder, per-turn attempts, the blocked warning), and runs one compaction: the middle of the
conversation is summarised by the model on a helper thread under a progress-aware budget,
and the result commits through a `CommitFence` so a summary that arrives after a timeout can
no longer change anything. A compaction always shrinks the context or changes nothing: the
summary has an output budget from the window (agent/summary.py), one cut off at that budget
is asked for again shorter, then rejected, and a summary commits only when the next request
it projects (in the provider's units, agent/context_gauge.py) is smaller than before.
The pre-compaction rows stay in the database (`compacted = 1`); the model sees only the
protected head, the summary and the recent tail, and `load_messages(include_compacted=False)`
reproduces exactly that list (D3).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.answer_cap import DEFAULT_MAX_ANSWER_MB, cap_chars
from agent.budget import BudgetStop, begin_spending, guard_call
from agent.config import CompressionSettings
from agent.context_gauge import ContextGauge
from agent.kinds import CallPurpose
from agent.messages import Message
from agent.models import (
    DEFAULT_CONTEXT_WINDOW,
    estimate_request,
    estimate_tokens,
    tokens_for_chars,
)
from agent.plans import carried_plan
from agent.providers.base import (
    Abort,
    ChatRequest,
    FinishPart,
    ReasoningPart,
    TextPart,
    ThinkingPart,
    UsagePart,
)
from agent.providers.errors import ProviderError
from agent.summary import (
    render_transcript,
    summary_budget,
    summary_system_prompt,
    transcript_room,
    words_for,
)
from agent.usage import estimated_usage

if TYPE_CHECKING:
    from agent.ports import CompactionHost
    from agent.providers.base import Provider

log = logging.getLogger("hermes_tui.compaction")

COOLDOWN_LADDER = (60.0, 300.0, 900.0)
"""Seconds automatic compaction waits after the 1st, 2nd, 3rd and later failures (C3)."""

SUMMARY_KEY = "compaction_summary"
"""`display_metadata` key of a row that carries a compaction summary (standalone or merged)."""

SUMMARY_HEADER = "[Summary of the earlier conversation]"
SUMMARY_FOOTER = "[End of summary; the conversation continues below]"
SUMMARY_ATTEMPTS = 2
"""A summary cut off at its output limit is asked for once more, in half the words (C1)."""


def _model_visible(m: Message) -> bool:
    # A withheld message (its turn failed unanswered) is never sent: it can anchor no cut,
    # take no merged summary (C5), and is not summarised as if the model had seen it.
    return not m.is_display and not m.ephemeral and not m.withheld


def is_summary_row(message: Message | dict[str, Any]) -> bool:
    """True for a row that carries a compaction summary (it must never be overwritten)."""
    if isinstance(message, dict):
        meta = message.get("display_metadata")
    else:
        meta = message.display_metadata
    return bool(meta and meta.get(SUMMARY_KEY))


def override_text(message: Message, text: str) -> bool:
    """Replace a message's text with a clean version, unless it carries a summary (C5).

    Every "clean text" override goes through here; the store has no way to rewrite a
    message's text but the compaction's own merge. Returns False when the row is protected.
    """
    if is_summary_row(message):
        log.info("refused to overwrite a row that carries the compaction summary")
        return False
    message.content = text
    return True


# -- planning -------------------------------------------------------------------------------
@dataclass
class Plan:
    """Where to cut: messages[:head] are kept, messages[head:tail] summarised, the rest kept."""

    head: int
    tail: int
    summarised: list[Message]


def plan_cut(messages: list[Message], protect_first: int, keep_recent: int) -> Plan | None:
    """Choose the span to summarise, or None when there is too little to compact.

    Cuts only at safe boundaries (a model-visible, non-ephemeral, non-tool message), so no
    tool call is ever separated from its result. Ephemeral scaffolding (D2) never anchors a
    cut and is never summarised as if the user had said it.
    """
    n = len(messages)

    def safe(i: int) -> bool:
        m = messages[i]
        return _model_visible(m) and m.role != "tool"

    visible = [i for i, m in enumerate(messages) if _model_visible(m)]
    if not visible:
        return None
    protect_first = max(1, protect_first)
    if len(visible) <= protect_first:
        return None
    head = visible[protect_first - 1] + 1
    while head < n and not safe(head):
        head += 1
    keep_recent = max(1, keep_recent)
    tail = visible[-keep_recent] if len(visible) >= keep_recent else visible[0]
    while tail > head and not safe(tail):
        tail -= 1
    if tail <= head:
        return None
    summarised = [m for m in messages[head:tail] if _model_visible(m)]
    if len(summarised) < 2:
        return None
    return Plan(head, tail, summarised)


# -- the fence and the progress channel -------------------------------------------------------
class CommitFence:
    """Exactly one of commit and cancel wins; a summary that arrives late never commits (C2)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state = "open"  # open | committed | cancelled | failed

    def commit(self, apply: Callable[[], Any]) -> bool:
        """Run `apply` under the fence if nobody cancelled; True when it committed."""
        with self._lock:
            if self.state != "open":
                return False
            try:
                apply()
            except BaseException:
                self.state = "failed"
                raise
            self.state = "committed"
            return True

    def cancel(self) -> bool:
        """Close the fence; False when a commit already happened (then the result stands)."""
        with self._lock:
            if self.state == "committed":
                return False
            if self.state == "open":
                self.state = "cancelled"
            return True


class _Progress:
    """What the helper thread reports to the waiting caller."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.chunks = 0
        self.chars = 0
        self.done = False
        self.committed = False
        self.error: str | None = None
        self.reason = "error"
        self.summary_tokens = 0
        self.cancel_reason: str | None = None

    def advance(self, chars: int) -> None:
        with self.cond:
            self.chunks += 1
            self.chars += chars
            self.cond.notify_all()

    def finish(
        self, *, committed: bool = False, error: str | None = None, reason: str = "error"
    ) -> None:
        with self.cond:
            self.done, self.committed, self.error = True, committed, error
            self.reason = "ok" if committed else reason
            self.cond.notify_all()

    def cancel(self, reason: str) -> None:
        with self.cond:
            self.cancel_reason = reason
            self.cond.notify_all()


@dataclass
class CompactionResult:
    """How a compaction ended. `reason`: ok | nothing | busy | idle_timeout | ceiling | error
    | cutoff | no_shrink | cancelled | blocked."""

    ok: bool
    reason: str
    message: str = ""
    summarised: int = 0
    summary_tokens: int = 0
    tokens_after: int = 0


@dataclass
class _Streamed:
    """One summary attempt: its text, finish reason, the server's usage and reasoning size."""

    text: str
    finish: str | None
    usage: UsagePart | None
    reasoning_chars: int


@dataclass
class _Job:
    """Everything one compaction's helper thread works with."""

    host: CompactionHost
    provider: Provider
    plan: Plan
    focus: str | None
    budget: int
    window: int
    before: int
    abort: Abort
    progress: _Progress
    fence: CommitFence

    def request(self, words: int) -> ChatRequest:
        """The summary request: the model's own request (model, routing key C7), asking for
        a summary of at most `words` words within `budget` tokens, its transcript cut to fit."""
        system = summary_system_prompt(words)
        room = transcript_room(self.window, self.budget, system)
        return replace(
            self.host.request(),
            messages=[Message("user", render_transcript(self.plan.summarised, self.focus, room))],
            system=system,
            tools=[],
            max_tokens=self.budget,
        )


@dataclass
class Rewrite:
    """A compaction before it is applied: what stays, the rows it adds, the row it merges."""

    head: list[Message]
    middle: list[Message]
    tail: list[Message]
    kept: list[Message]
    """The display marker, then the standalone summary row when there is one."""
    merged: tuple[str, dict[str, Any]] | None
    """(content, display_metadata) of the first kept message when the summary merges into it."""

    def messages(self) -> list[Message]:
        """The conversation after the compaction (a merged first row as a copy)."""
        tail = self.tail
        if self.merged is not None:
            content, meta = self.merged
            tail = [replace(tail[0], content=content, display_metadata=meta), *tail[1:]]
        return self.head + self.kept + tail


# -- the compressor ---------------------------------------------------------------------------
class ContextCompressor:
    """Policy and machinery of context compaction for one Agent.

    State: consecutive failures (the cooldown ladder), the time until which automatic
    compaction is blocked, attempts in the current turn (`max_attempts`), whether the
    over-threshold-but-blocked warning was shown, and the gauge that turns estimates into
    the provider's token counts. `on_change` is called when the cooldown changes, so its
    owner can keep it with the session (`cooldown_state`, `restore_cooldown`).
    """

    def __init__(
        self,
        settings: CompressionSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.progress_clock: Callable[[], float] = time.monotonic
        """What the summary's idle timeout and ceiling are timed with (C2); apart from `clock`
        (the cooldown's), so a test can pace one without moving the other."""
        self.on_change = on_change
        self.window_assumed = False  # the last measure assumed DEFAULT_CONTEXT_WINDOW
        self.told_assumed = False
        self.failures = 0
        self.blocked_until = float("-inf")
        self.turn_attempts = 0
        self.warned = False
        self.gauge = ContextGauge()
        self.helper: threading.Thread | None = None  # the last summary thread (tests join it)
        self._active: _Progress | None = None
        self._active_lock = threading.Lock()

    # -- policy ---------------------------------------------------------------------------
    def record_failure(self, reason: str) -> float:
        """The one cooldown ladder (C3): every failure path calls this; returns the cooldown."""
        self.failures += 1
        cooldown = COOLDOWN_LADDER[min(self.failures, len(COOLDOWN_LADDER)) - 1]
        self.blocked_until = self.clock() + cooldown
        log.warning("compaction failed (%s); next automatic try in %.0f s", reason, cooldown)
        self._changed()
        return cooldown

    def record_success(self) -> None:
        """A compaction committed: the ladder resets and the blocked warning re-arms (C4)."""
        had_cooldown = self.failures > 0
        self.failures = 0
        self.blocked_until = float("-inf")
        self.warned = False
        if had_cooldown:
            self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def cooldown_state(self, wall: Callable[[], float] = time.time) -> dict[str, float] | None:
        """The cooldown as stored with the session (a wall-clock end), None when there is none."""
        if self.failures == 0:
            return None
        left = max(0.0, self.blocked_until - self.clock())
        return {"failures": self.failures, "until": round(wall() + left, 3)}

    def restore_cooldown(self, state: Any, wall: Callable[[], float] = time.time) -> None:
        """Take up a stored cooldown (another run of the session); None or junk: no cooldown."""
        self.failures, self.blocked_until, self.warned = 0, float("-inf"), False
        if not isinstance(state, dict):
            return
        failures, until = state.get("failures"), state.get("until")
        if not isinstance(failures, int) or not isinstance(until, int | float) or failures < 1:
            return
        self.failures = failures
        self.blocked_until = self.clock() + max(0.0, float(until) - wall())

    def begin_turn(self) -> None:
        """A new turn: its automatic attempts start from zero."""
        self.turn_attempts = 0

    def blocked_reason(self) -> str | None:
        """Why automatic compaction may not run now: cooldown, attempts spent, or None."""
        if self.turn_attempts >= self.settings.max_attempts:
            return "attempts"
        left = self.blocked_until - self.clock()
        if left > 0:
            return f"cooldown:{left:.0f}"
        return None

    def blocked_warning(self, reason: str, tokens: int, window: int) -> str | None:
        """The warning text the first time compaction is blocked over threshold; else None."""
        if self.warned:
            return None
        self.warned = True
        share = tokens / window if window else 0.0
        if reason == "attempts":
            why = f"it already ran {self.settings.max_attempts} time(s) this turn"
        else:
            why = f"it is cooling down after a failure ({reason.split(':', 1)[1]} s left)"
        return (
            f"Context is at {share:.0%} of the model's window but automatic compaction is "
            f"paused: {why}. Run /compact, or start a /new session."
        )

    # -- measuring ----------------------------------------------------------------------------
    def measure(self, host: CompactionHost) -> tuple[int, int]:
        """(tokens of the next request in the provider's units as far as known, the window).

        An unknown window is taken as DEFAULT_CONTEXT_WINDOW, explicitly (`window_assumed`).
        """
        tokens = self.gauge.project(estimate_request(host.request()))
        window = host.context_window
        self.window_assumed = window is None
        return tokens, window or DEFAULT_CONTEXT_WINDOW

    def assumed_window_notice(self, host: CompactionHost) -> None:
        """Say once that compaction measures against an assumed window, and how to fix it."""
        if not self.window_assumed or self.told_assumed:
            return
        self.told_assumed = True
        text = (
            f"The model's context window is unknown: compaction assumes "
            f"{DEFAULT_CONTEXT_WINDOW:,} tokens. Set context_window for the provider in "
            "config.yaml to the server's size."
        )
        log.info("%s", text)
        host.sink(ev.Notice(text, "info"))

    def over_threshold(self, tokens: int, window: int) -> bool:
        return tokens >= self.settings.threshold * window

    # -- entry points -----------------------------------------------------------------------
    def maybe_compact(self, host: CompactionHost) -> CompactionResult | None:
        """Before a model call: compact when over threshold and allowed; warn once if blocked."""
        tokens, window = self.measure(host)
        if not self.over_threshold(tokens, window):
            return None  # below the threshold: never compact, never warn (C4)
        self.assumed_window_notice(host)
        reason = self.blocked_reason()
        if reason is not None:
            text = self.blocked_warning(reason, tokens, window)
            if text is not None:
                log.warning("%s", text)
                host.sink(ev.Notice(text, "warning"))
            return None
        self.turn_attempts += 1
        return self.compact(host, reason="auto", tokens=tokens, window=window)

    def cancel(self) -> None:
        """Cancel a running compaction (the user stopped the turn)."""
        with self._active_lock:
            active = self._active
        if active is not None:
            active.cancel("cancelled")

    def compact(
        self,
        host: CompactionHost,
        *,
        focus: str | None = None,
        reason: str = "manual",
        tokens: int | None = None,
        window: int | None = None,
    ) -> CompactionResult:
        """Run one compaction on the calling thread's behalf; blocks until it ends."""
        if tokens is None or window is None:
            tokens, window = self.measure(host)
        settings = self.settings
        plan = plan_cut(host.messages, settings.protect_first, settings.keep_recent)
        if plan is None:
            result = CompactionResult(
                False, "nothing", "Nothing to compact yet: the conversation is short."
            )
            if reason == "auto":
                # An attempt that cannot shrink the context counts like a failed one.
                self.record_failure("nothing to summarise")
            host.sink(ev.Notice(result.message, "info"))
            return result
        host.sink(ev.CompactionStarted(reason))
        if reason == "manual":
            begin_spending(host)  # a /compact is held to the turn cap as a turn is
        outcome = self._run(host, plan, focus, tokens, window)
        if outcome.ok:
            self.record_success()
            after, _ = self.measure(host)
            outcome.tokens_after = after
            outcome.message = (
                f"Compacted {outcome.summarised} messages into a summary of about "
                f"{outcome.summary_tokens} tokens (context ~{tokens} -> ~{after} tokens)."
            )
            log.info("compaction committed: %s", outcome.message)
            host.sink(ev.DisplayRow("compaction", {"summarised": outcome.summarised}))
        else:
            if outcome.reason not in ("cancelled", "budget"):
                cooldown = self.record_failure(outcome.reason)
                outcome.message += (
                    f" Nothing was dropped; the turn continues with the full context. "
                    f"Automatic compaction pauses for {cooldown:.0f} s."
                )
            log.info("compaction did not commit: %s", outcome.message)
        # A cap that stopped an automatic compaction stops its turn, which says it once.
        told = "" if outcome.reason == "budget" and reason == "auto" else outcome.message
        host.sink(ev.CompactionFinished(outcome.ok, outcome.summarised, told))
        return outcome

    # -- one run ----------------------------------------------------------------------------
    def _run(
        self, host: CompactionHost, plan: Plan, focus: str | None, before: int, window: int
    ) -> CompactionResult:
        provider = host.provider()
        provider.call_deadline = None
        span = estimate_tokens(plan.summarised)
        job = _Job(
            host=host,
            provider=provider,
            plan=plan,
            focus=focus,
            budget=summary_budget(window, span),
            window=window,
            before=before,
            abort=Abort(),
            progress=_Progress(),
            fence=CommitFence(),
        )
        context = contextvars.copy_context()
        helper = threading.Thread(
            target=context.run, args=(self._summarise, job), name="hermes-compaction", daemon=True
        )
        with self._active_lock:
            self._active = job.progress
        self.helper = helper
        helper.start()
        try:
            result = _wait(
                host, job.progress, job.fence, job.abort, self.settings, self.progress_clock
            )
        finally:
            with self._active_lock:
                self._active = None
        result.summarised = len(plan.summarised) if result.ok else 0
        result.summary_tokens = job.progress.summary_tokens
        return result

    def _summarise(self, job: _Job) -> None:
        """Helper thread: stream the summary (once more, shorter, when it is cut off at its
        output limit), check that it makes the next request smaller, commit through the fence."""
        progress = job.progress
        words = words_for(job.budget)
        try:
            for _ in range(SUMMARY_ATTEMPTS):
                streamed = _stream_summary(job, words)
                if job.abort.fired or streamed.finish != "length":
                    break
                log.info("the summary reached its %d-token limit; asking again", job.budget)
                words = max(10, words // 2)
        except ProviderError as exc:
            progress.finish(error=exc.message)
            return
        except BudgetStop as exc:
            progress.finish(error=str(exc), reason="budget")
            return
        except Exception as exc:
            log.exception("summary stream failed")
            progress.finish(error=f"{type(exc).__name__}: {exc}")
            return
        summary = streamed.text
        if job.abort.fired:
            progress.finish(error="the summary was cancelled")
            return
        if streamed.finish == "length":
            progress.finish(
                error=f"the summary was cut off at its {job.budget}-token output limit twice",
                reason="cutoff",
            )
            return
        if not summary:
            progress.finish(error="the model returned an empty summary")
            return
        log.info("summary streamed (%d chars)", len(summary))
        rewrite = self._rewrite(job.host, job.plan, summary)
        after, summary_tokens = self._project(job.host, rewrite, streamed)
        progress.summary_tokens = summary_tokens
        if after >= job.before:
            progress.finish(
                error=(
                    f"the summary (~{summary_tokens} tokens) would not make the context "
                    f"smaller (~{job.before} -> ~{after} tokens)"
                ),
                reason="no_shrink",
            )
            return
        try:
            ok = job.fence.commit(lambda: self._apply(job.host, rewrite))
        except Exception as exc:
            log.exception("compaction commit failed")
            progress.finish(error=f"saving the compaction failed: {exc}")
            return
        if not ok:
            log.info("a summary arrived after the compaction was cancelled; not committed")
        progress.finish(committed=ok, error=None if ok else "the summary arrived too late")

    def _project(
        self, host: CompactionHost, rewrite: Rewrite, streamed: _Streamed
    ) -> tuple[int, int]:
        """(tokens of the next request after `rewrite`, tokens of the summary): estimates in
        the provider's units, the summary counted by the server when it reported only text."""
        after = self.gauge.project(
            estimate_request(replace(host.request(), messages=rewrite.messages()))
        )
        estimate = tokens_for_chars(len(streamed.text))
        usage = streamed.usage
        if usage is not None and not usage.estimated and not streamed.reasoning_chars:
            counted = usage.output_tokens - usage.reasoning_tokens
            if counted > 0:
                after += counted - estimate
                return after, counted
        return after, estimate

    # -- the commit -------------------------------------------------------------------------
    def _rewrite(self, host: CompactionHost, plan: Plan, summary: str) -> Rewrite:
        """Where the summary goes: a standalone row, or merged into the first kept message."""
        messages = host.messages
        head, middle, tail = (
            messages[: plan.head],
            messages[plan.head : plan.tail],
            messages[plan.tail :],
        )
        first = tail[0]  # a safe boundary: model-visible, not a tool result
        before = next((m for m in reversed(head) if _model_visible(m)), None)
        # The latest plan and the todo list go on word for word: a summary would paraphrase
        # them, or drop them (N1, N2).
        plan_section = carried_plan(plan.summarised)
        todos = host.state.todos.carried()
        carried = "".join(f"\n\n{part}" for part in (plan_section, todos) if part)
        text = f"{SUMMARY_HEADER}\n{summary}{carried}\n{SUMMARY_FOOTER}"
        display = Message(
            "assistant",
            display_kind="compaction",
            display_metadata={"summarised": len(plan.summarised)},
        )
        role = _summary_role(before, first)
        if role is not None:
            row = Message(role, text, display_metadata={SUMMARY_KEY: "standalone"})
            return Rewrite(head, middle, tail, [display, row], None)
        # C5: no role fits between its neighbours, so the summary merges into the first
        # kept message, and that row is marked so no clean-text override can drop it.
        content = f"{text}\n\n{first.content}" if first.content else text
        meta = {**(first.display_metadata or {}), SUMMARY_KEY: "merged", "summary_chars": len(text)}
        return Rewrite(head, middle, tail, [display], (content, meta))

    def _apply(self, host: CompactionHost, rewrite: Rewrite) -> None:
        """Replace the middle by the summary in the database first, then in memory."""
        first = rewrite.tail[0]
        writer, session_id = host.writer, host.session_id
        if writer.store is not None and session_id is not None:
            merge = None
            if rewrite.merged is not None and first.db_id is not None:
                merge = (first.db_id, *rewrite.merged)
            ids = writer.apply_compaction(
                session_id,
                compacted_ids=[m.db_id for m in rewrite.middle if m.db_id is not None],
                before_id=first.db_id,
                rows=[m.to_row() for m in rewrite.kept],
                merge=merge,
            )
            for message, row_id in zip(rewrite.kept, ids, strict=False):
                message.db_id = row_id
        if rewrite.merged is not None:
            first.content, first.display_metadata = rewrite.merged
        host.replace_messages(rewrite.head + rewrite.kept + rewrite.tail)


def _stream_summary(job: _Job, words: int) -> _Streamed:
    """One summary request, streamed; its usage is accounted however it ends (S2-S7)."""
    request = job.request(words)
    parts: list[str] = []
    finish: str | None = None
    usage: UsagePart | None = None
    reasoning = 0
    written = 0
    cap = cap_chars(DEFAULT_MAX_ANSWER_MB)  # a summary is far smaller; a hostile one is not
    # Held to the caps ($2), never asked about its size: the app chose to send it. Not the
    # conversation's request: the gauge's count does not apply to it.
    guard_call(job.host, estimate_request(request), ask_size=False)
    stream = job.provider.stream(request, job.abort)
    try:
        for part in stream:
            if type(part) is TextPart:
                written += len(part.text)
                parts.append(part.text)
                job.progress.advance(len(part.text))
            elif type(part) is ReasoningPart:
                reasoning += len(part.text)
                job.progress.advance(0)
            elif type(part) is ThinkingPart:
                job.progress.advance(0)
            elif type(part) is UsagePart:
                usage = part
            elif type(part) is FinishPart:
                finish = part.reason
            if written > cap or reasoning > cap:  # H10: cut off, read no further
                finish = "length"
                break
            if job.abort.fired:
                break
    finally:
        # The stream is closed on this (its own) thread, never by the caller (W5).
        stream.close()
        chars = sum(map(len, parts)) + reasoning
        if usage is None and chars:
            # Not the conversation's request: the gauge's count does not apply to it.
            usage = estimated_usage(estimate_request(request), chars)
        if usage is not None:
            job.host.record_usage(usage, CallPurpose.SUMMARY)
    return _Streamed("".join(parts).strip(), finish, usage, reasoning)


def _wait(
    host: CompactionHost,
    progress: _Progress,
    fence: CommitFence,
    abort: Abort,
    settings: CompressionSettings,
    clock: Callable[[], float] = time.monotonic,
) -> CompactionResult:
    """Caller thread: wait on progress; every chunk resets the idle timer (C2)."""
    idle = settings.idle_timeout_seconds
    start = last = clock()
    ceiling = start + settings.total_ceiling_seconds
    seen = 0
    while True:
        with progress.cond:
            now = clock()
            wait = min(last + idle, ceiling) - now
            quiet = not (progress.done or progress.cancel_reason or progress.chunks != seen)
            if quiet and wait > 0:
                progress.cond.wait(wait)
            done, chunks, chars = progress.done, progress.chunks, progress.chars
            cancel = progress.cancel_reason
            # Read under the lock: the time and the chunk count are one snapshot, so a
            # chunk that lands meanwhile cannot age the count this pass acts on.
            now = clock()
        if done:
            if progress.committed:
                return CompactionResult(True, "ok")
            if progress.reason == "budget":  # the cap's own sentence, as a turn says it
                return CompactionResult(False, "budget", progress.error or "")
            return CompactionResult(False, progress.reason, f"Compaction failed: {progress.error}.")
        if chunks != seen:
            seen, last = chunks, now
            host.touch()
            host.sink(ev.CompactionProgress(tokens_for_chars(chars)))
        if cancel is not None:
            kind, message = "cancelled", "Compaction cancelled."
        elif now >= ceiling:
            kind = "ceiling"
            message = (
                f"Compaction took longer than {settings.total_ceiling_seconds:g} s and "
                "was cancelled."
            )
        elif now >= last + idle:
            kind = "idle_timeout"
            message = f"The summary made no progress for {idle:g} s; compaction was cancelled."
        else:
            continue
        if not fence.cancel():
            # The helper committed just before the cancel: the result stands.
            with progress.cond:
                progress.cond.wait_for(lambda: progress.done)
            return CompactionResult(True, "ok")
        abort.fire()
        return CompactionResult(False, kind, message)


def _role_class(message: Message | None) -> str | None:
    if message is None:
        return None
    return "user" if message.role in ("user", "tool") else "assistant"


def _summary_role(before: Message | None, after: Message) -> str | None:
    """The role a standalone summary can take between its neighbours, or None (merge)."""
    taken = {_role_class(before), _role_class(after)}
    for role in ("user", "assistant"):
        if role not in taken:
            return role
    return None
