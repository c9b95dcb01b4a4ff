"""The Agent: run_turn / steer / redirect / stop, and the tool loop around the model."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import events as ev
from agent import recovery
from agent.compaction import CompactionResult, ContextCompressor, log_session, session_var
from agent.config import Config, split_model_ref
from agent.inbox import Inbox
from agent.liveness import ActivityClock, CodeSkewGuard, raised_in_own_code
from agent.messages import Message, ThinkingBlock, ToolCall, ToolCallIds
from agent.models import context_window_for
from agent.pricing import call_cost, prices_for
from agent.prompts import EMPTY_ANSWER_NUDGE, system_prompt
from agent.providers.base import (
    Abort,
    ChatRequest,
    FinishPart,
    ReasoningPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UsagePart,
)
from agent.providers.errors import ProviderError, redact, register_secret, summarize
from agent.secrets import Secrets, safe_url
from storage.errors import StorageError, StorageLockedError, lock_wait_notice, sentence

log = logging.getLogger("hermes_tui.agent")

Sink = Callable[[ev.AgentEvent], None]


@dataclass
class TurnResult:
    """How a turn ended: status ok | error | stopped | budget | truncated."""

    status: str
    text: str = ""
    pending_steer: str | None = None
    error: str | None = None
    session_id: str | None = None
    iterations: int = 0
    unsent: str | None = None


@dataclass
class Draft:
    """One model call's output as it streams in."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, list[Any]] = field(default_factory=dict)
    thinking: list[ThinkingBlock] = field(default_factory=list)
    finish: str | None = None
    usage: UsagePart | None = None
    produced: bool = False

    @property
    def visible_text(self) -> str:
        """The answer text streamed so far (never reasoning)."""
        return "".join(self.text)


@dataclass
class Usage:
    """Running totals of the current session: what was stored at resume, plus this run's."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    @classmethod
    def of_session(cls, session: dict[str, Any] | None) -> Usage:
        """The totals a stored session row holds (none for a new session)."""
        if not session:
            return cls()
        return cls(
            session.get("input_tokens") or 0,
            session.get("output_tokens") or 0,
            session.get("estimated_cost_usd"),
        )


class TurnStopped(Exception):
    """Raised inside a turn when the user stopped it."""


class Agent:
    """A tool-using agent over one session; `run_turn` blocks, the rest is thread-safe."""

    def __init__(
        self,
        config: Config,
        store: Any = None,
        sink: Sink | None = None,
        *,
        workspace: Path | str | None = None,
        approve: Callable[[Any], Any] | None = None,
        registry: Any = None,
    ) -> None:
        from agent.tools.approvals import ApprovalMemory
        from agent.tools.registry import default_registry

        self.config = config
        self.store = store
        self.sink: Sink = sink or (lambda _event: None)
        self.workspace = Path(workspace or os.getcwd()).resolve()
        self.approve = approve
        # The session's "always" answers: kept with the session, forgotten when it changes.
        self.approvals = ApprovalMemory()
        self.registry = registry or default_registry()
        self.inbox = Inbox()
        self.messages: list[Message] = []
        self.session_id: str | None = None
        self.model_ref = config.model
        self.usage = Usage()
        self._told_not_saved = False
        self._told_saving_waits = False
        self.hooks: dict[str, Callable[[], None]] = {}
        self._ids = ToolCallIds()
        self._providers: dict[str, Any] = {}
        self._turn_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._stop = threading.Event()
        self._tool_cancel = threading.Event()
        self._abort = Abort()
        self._redirect: str | None = None
        self._phase = "idle"
        self.activity = ActivityClock(self._stamp_heartbeat)
        self.compressor = ContextCompressor(config.compression)
        self.skew_guard = CodeSkewGuard()
        self.secrets = self._read_secrets()

    def _read_secrets(self) -> Secrets:
        """Every configured key, known to redaction everywhere (errors, logs, tool output)."""
        secrets = Secrets.of(self.config)
        register_secret(*secrets.values)
        return secrets

    # -- session ----------------------------------------------------------------------------
    @property
    def provider_name(self) -> str:
        """The provider part of the current model reference."""
        return split_model_ref(self.model_ref)[0]

    @property
    def model_name(self) -> str:
        """The model part of the current model reference."""
        return split_model_ref(self.model_ref)[1]

    @property
    def context_window(self) -> int:
        """The current model's context window: what compaction and the context bar use."""
        return context_window_for(self.config, self.model_ref)

    @property
    def busy(self) -> bool:
        """True while a turn runs."""
        return self._phase != "idle"

    @property
    def phase(self) -> str:
        """idle | model | tools."""
        return self._phase

    def new_session(self) -> None:
        """Forget the current session; the next turn starts a fresh one."""
        self.session_id = None
        self.messages = []
        self._ids = ToolCallIds()
        self.usage = Usage()
        self.approvals.clear()

    def attach_session(
        self, session_id: str, rows: list[dict[str, Any]], session: dict[str, Any] | None = None
    ) -> None:
        """Switch to a stored session from its persisted rows (no I/O here) (D3).

        `session`, its stored row, carries the totals the usage counts on from.
        """
        self.session_id = session_id
        # Compacted rows are history for the transcript, never for the model (C, D3).
        self.messages = [Message.from_row(r) for r in rows if not r.get("compacted")]
        self._ids = ToolCallIds.from_history(self.messages)
        self.usage = Usage.of_session(session)
        self.approvals.clear()

    def resume(self, ref: str) -> dict[str, Any]:
        """Blocking resume by id or title through the store; returns the session row."""
        if self.store is None:
            raise ValueError("resuming needs a session store")
        session = self.store.call(self.store.find_session, ref)
        if session is None:
            raise LookupError(f"No session matches {ref!r}: see `hermes-tui sessions list`.")
        rows = self.store.call(self.store.load_messages, session["id"], include_compacted=False)
        self.attach_session(session["id"], rows, session)
        if session.get("model") and session.get("provider"):
            ref_model = f"{session['provider']}:{session['model']}"
            if session["provider"] in self.config.providers:
                self.model_ref = ref_model
        return session

    @property
    def interrupted(self) -> bool:
        """True when the attached history ends mid-turn (e.g. the last process died)."""
        return recovery.interrupted(self.messages)

    def continue_interrupted(self) -> TurnResult:
        """Auto-continue an interrupted turn with a typed recovery note (S8, D4)."""
        return self.run_turn(recovery.RECOVERY_NOTE, note_kind=recovery.RECOVERY_NOTE_KIND)

    def _close_unanswered_calls(self) -> None:
        """Give tool calls left without a result by a crash one, so the next request is valid."""
        for call in recovery.unanswered_calls(self.messages):
            message = Message(
                "tool", recovery.INTERRUPTED_TOOL_RESULT, tool_call_id=call.id, name=call.name
            )
            self._append(message, persist=True)

    def set_model(self, ref: str) -> None:
        """Switch model; records a `model_switch` display row in a live session (D1)."""
        provider, model = split_model_ref(ref)
        self.config.provider(provider)
        previous, self.model_ref = self.model_ref, ref
        if self.session_id is not None and previous != ref:
            meta = {"from": previous, "to": ref}
            self._append(Message("assistant", display_kind="model_switch", display_metadata=meta))
            if self.store is not None:
                self.store.enqueue_session_update(self.session_id, model=model, provider=provider)
            self.sink(ev.DisplayRow("model_switch", meta))

    # -- cross-thread controls ----------------------------------------------------------------
    def steer(self, text: str) -> bool:
        """Offer guidance to the running turn; False means no turn took it (queue it)."""
        return self.inbox.steer(text)

    def redirect(self, text: str) -> bool:
        """Cancel the in-flight model request and re-run with `text` appended (T5).

        During tools it degrades to a steer. Returns False when nothing took the text (no
        turn, or a stop already won), so the caller queues it.
        """
        with self._state_lock:
            if self._stop.is_set() or self._phase == "idle":
                return False
            if self._phase != "model":
                return self.inbox.steer(text)
            if self._redirect is not None:
                self._redirect += "\n\n" + text
            else:
                self._redirect = text
            self._abort.fire()
            return True

    def stop(self) -> None:
        """End the running turn promptly, from any thread (T6)."""
        with self._state_lock:
            self._stop.set()
            self._tool_cancel.set()
            self._abort.fire()
        self.compressor.cancel()

    def _hook(self, name: str) -> None:
        hook = self.hooks.get(name)
        if hook is not None:
            hook()

    # -- the turn -------------------------------------------------------------------------
    def run_turn(self, text: str, *, note_kind: str | None = None) -> TurnResult:
        """Run one user turn to its end; blocks the calling thread.

        `note_kind` types the user message (e.g. "recovery") in the same insert as its text.
        """
        skew = self.skew_guard.skew_message()
        if skew is not None:
            # Refused before anything is written: the text goes back to the user (L4).
            self.sink(ev.TurnError(skew, "upgraded"))
            return TurnResult(status="error", error=skew, unsent=text)
        with self._turn_lock:
            self.activity.reset()
            with self._state_lock:
                self._stop.clear()
                self._tool_cancel.clear()
                self._redirect = None
                self._phase = "model"
            self.inbox.open_generation()
            self.compressor.begin_turn()
            result = TurnResult(status="ok")
            log_token = None
            taken = False  # the user message is in the turn (and queued for the database)
            try:
                self._ensure_session(text)
                # C6: every log record of this turn, on any thread it spawns, names the session.
                log_token = session_var.set(self.session_id)
                result.session_id = self.session_id
                self.sink(ev.TurnStarted(self.session_id or "", text))
                self._close_unanswered_calls()
                meta = recovery.note_metadata(note_kind) if note_kind else None
                self._append(Message("user", text, display_metadata=meta), persist=True)
                taken = True
                self._loop(result)
            except TurnStopped:
                result.status = "stopped"
            except ProviderError as exc:
                result.status = "error"
                result.error = summarize(exc)  # redacted, like every error sentence (K3)
                self.sink(ev.TurnError(result.error, exc.kind))
            except StorageError as exc:
                # A sentence, not an internal error (H7): the store could not start the turn
                # (create the session); text it never took goes back to the user.
                log.warning("turn ended by a storage failure: %s", exc)
                result.status = "error"
                result.error = sentence(exc)
                if not taken:
                    result.unsent = text
                self.sink(ev.TurnError(result.error, "storage"))
            except Exception as exc:  # never let a bug kill the worker silently
                log.exception("turn failed")
                result.status = "error"
                result.error = redact(self._internal_error(exc))
                self.sink(ev.TurnError(result.error, "internal"))
            finally:
                self._finish_turn(result)
                if log_token is not None:
                    session_var.reset(log_token)
            return result

    def _internal_error(self, exc: Exception) -> str:
        """The sentence for a bug; an AttributeError in our own code points at an upgrade (L4)."""
        if isinstance(exc, AttributeError) and raised_in_own_code(exc):
            skew = self.skew_guard.skew_message()
            if skew is not None:
                return skew
            return (
                f"hermes-tui hit an internal AttributeError ({exc}), which usually means its "
                "code changed while running: restart to continue."
            )
        return f"Internal error: {type(exc).__name__}: {exc}"

    def _stamp_heartbeat(self, wall_time: float) -> None:
        """Write the session's heartbeat (throttled by the activity clock) (L1)."""
        if self.store is not None and self.session_id is not None:
            self.store.enqueue_session_update(self.session_id, last_activity_at=wall_time)

    def _finish_turn(self, result: TurnResult) -> None:
        """The one terminal path of every exit: tidy, flush, seal and drain steers (T3)."""
        self.messages = [m for m in self.messages if not m.ephemeral]
        for message in self.messages:
            message.thinking = []
        if self.store is not None and self.session_id is not None:
            if not self._saving_waits():
                try:
                    self.store.flush_threadsafe()
                except Exception as exc:
                    log.warning("flush at turn end failed: %s", exc)
            self.check_saving()
        with self._state_lock:
            self._phase = "idle"
            leftover, self._redirect = self._redirect, None
        if leftover is not None:
            # A redirect that arrived after the last model call returns as a pending steer.
            self.inbox.steer(leftover)
        self._hook("before_seal")
        result.pending_steer = self.inbox.seal_and_drain()
        if result.status == "ok" and self._stop.is_set():
            result.status = "stopped"
        self.sink(ev.TurnFinished(result.status, result.text, result.pending_steer))

    def _ensure_session(self, first_text: str) -> None:
        if self.session_id is not None:
            return
        title = " ".join(first_text.split())[:60]
        if self.store is None:
            self.session_id = uuid.uuid4().hex[:12]
            return
        row = self.store.call(
            self.store.create_session,
            model=self.model_name,
            provider=self.provider_name,
            workspace=str(self.workspace),
            title=title,
        )
        self.session_id = row["id"]

    def _loop(self, result: TurnResult) -> None:
        max_iterations = self.config.agent.max_iterations
        nudged = False
        iteration = 0
        while True:
            if self._stop.is_set():
                raise TurnStopped
            if iteration >= max_iterations:
                result.status = "budget"
                result.error = (
                    f"Stopped: the iteration budget ({max_iterations} model calls) is spent. "
                    "Send a message to let the agent continue."
                )
                self.sink(ev.Notice(result.error, "warning"))
                return
            self._deliver_steers()
            iteration += 1
            result.iterations = iteration
            self._flush_messages()  # S8: what the model will see is on disk before it is sent
            self._hook("before_model_call")
            self.compressor.maybe_compact(self)
            draft = self._call_model(iteration)
            redirect = self._take_redirect()
            if self._stop.is_set():
                self._checkpoint(draft)
                result.text = draft.visible_text
                if redirect is not None:
                    # Stop wins over a concurrent redirect, but its text is never lost (T5/T6).
                    self.inbox.steer(redirect)
                raise TurnStopped
            if redirect is not None:
                self._checkpoint(draft)
                self._append(Message("user", redirect), persist=True)
                self.sink(ev.DisplayRow("redirect", {"text": redirect}))
                iteration -= 1
                continue
            text = draft.visible_text
            if not text.strip() and not draft.calls:
                if nudged:
                    raise ProviderError(
                        "empty",
                        "The model returned an empty answer twice: try again, or switch "
                        "model with /model.",
                    )
                nudged = True
                self._append(Message("user", EMPTY_ANSWER_NUDGE, ephemeral=True))
                continue
            truncated = draft.finish == "length"
            calls = [] if truncated else self._ingest_calls(draft)
            message = Message("assistant", text, tool_calls=calls, thinking=draft.thinking)
            self._append(message, persist=True)
            self.sink(ev.AssistantMessage(text, tuple(c.to_dict() for c in calls)))
            result.text = text
            if truncated:
                result.status = "truncated"
                result.error = "The answer was cut off at the model's output limit."
                self.sink(ev.Notice(result.error, "warning"))
                return
            if not calls:
                return
            self._run_tools(calls)
            self._hook("after_tool_batch")

    def _deliver_steers(self) -> None:
        """Deliver accepted steers as user-authored guidance at a safe boundary (T2)."""
        for text in self.inbox.take():
            self._append(Message("user", text), persist=True)
            self.sink(ev.DisplayRow("steer", {"text": text}))

    def _take_redirect(self) -> str | None:
        with self._state_lock:
            text, self._redirect = self._redirect, None
            return text

    def _checkpoint(self, draft: Draft | None) -> None:
        """Keep the visible partial answer after a stop or redirect: never reasoning (R2)."""
        if draft is None:
            return
        text = draft.visible_text
        if text.strip():
            self._append(Message("assistant", text), persist=True)
            self.sink(ev.AssistantMessage(text, ()))

    def _ingest_calls(self, draft: Draft) -> list[ToolCall]:
        """Assemble streamed tool calls and make their ids unique in the session (A3)."""
        calls = []
        for position, index in enumerate(sorted(draft.calls)):
            raw_id, name, parts = draft.calls[index]
            arguments = "".join(parts)
            call_id = self._ids.claim(raw_id, name or "", arguments, position)
            calls.append(ToolCall(call_id, name or "unknown_tool", arguments))
        return calls

    # -- model calls ------------------------------------------------------------------------
    def _provider(self) -> Any:
        name = self.provider_name
        provider = self._providers.get(name)
        if provider is None:
            from agent.providers.factory import make_provider

            provider = make_provider(
                self.config.provider(name),
                idle_timeout=self.config.agent.stream_idle_timeout_seconds,
            )
            self._providers[name] = provider
        return provider

    def _request(self) -> ChatRequest:
        provider_config = self.config.provider(self.provider_name)
        return ChatRequest(
            model=self.model_name,
            messages=self.messages,
            system=self.config.agent.system_prompt or system_prompt(self.workspace),
            tools=self.registry.schemas(),
            max_tokens=provider_config.max_tokens,
            extra_body=self.routing_body(),
        )

    def routing_body(self) -> dict[str, Any]:
        """C7: the sticky routing key (the session's root id) for providers that want one.

        Sessions never rotate at compaction, so the root id is the session id.
        """
        if self.session_id and self.config.provider(self.provider_name).sticky_routing:
            return {"session_id": self.session_id}
        return {}

    def compact(self, focus: str | None = None) -> CompactionResult:
        """`/compact [focus]`: compact now; blocking, for when no turn runs (C1)."""
        if not self._turn_lock.acquire(blocking=False):
            return CompactionResult(
                False, "busy", "A turn is running: /compact works when the agent is idle."
            )
        try:
            if self.session_id is None or not self.messages:
                return CompactionResult(False, "nothing", "Nothing to compact yet.")
            with self._state_lock:
                self._stop.clear()
                self._phase = "compacting"
            with log_session(self.session_id):
                return self.compressor.compact(self, focus=focus, reason="manual")
        finally:
            with self._state_lock:
                self._phase = "idle"
            self._turn_lock.release()

    def _call_model(self, iteration: int) -> Draft:
        """One model call with retries (W8-W11); returns what streamed, partial on abort."""
        settings = self.config.agent
        attempts = max(1, settings.max_retries)
        attempt = 0
        provider = self._provider()
        # W9: after a first stall, every retry of this call shares one more idle period.
        provider.call_deadline = None
        while True:
            attempt += 1
            with self._state_lock:
                if self._stop.is_set() or self._redirect is not None:
                    return Draft()
                self._abort = abort = Abort()
            draft = Draft()
            self.sink(ev.RequestStarted(iteration, self.model_name, self.provider_name))
            try:
                self._stream_into(draft, abort)
                return draft
            except ProviderError as exc:
                if abort.fired:
                    return draft
                if exc.kind == "timeout" and provider.call_deadline is None:
                    idle = settings.stream_idle_timeout_seconds
                    provider.call_deadline = time.monotonic() + idle
                deadline = provider.call_deadline
                if exc.kind == "timeout" and deadline and time.monotonic() >= deadline:
                    raise
                most = min(attempts, exc.max_attempts or attempts)
                if not exc.retryable or attempt >= most:
                    raise
                if getattr(exc, "rotated", False):
                    delay = 0.0  # K1: the pool moved to another usable key
                else:
                    delay = backoff_delay(attempt, settings.retry_base_seconds, exc.retry_after)
                log.info("retrying after %s (%d/%d)", exc.kind, attempt, most)
                if draft.produced:
                    self.sink(ev.StreamReset(summarize(exc)))
                self.sink(ev.Retrying(attempt + 1, most, delay, summarize(exc)))
                if self._stop.wait(delay):
                    return draft

    def _stream_into(self, draft: Draft, abort: Abort) -> None:
        sink = self.sink
        touch = self.activity.touch
        parts = self._provider().stream(self._request(), abort)
        try:
            for part in parts:
                touch()
                if abort.fired:
                    # Belt and braces: even when no socket could be shut down, stop reading.
                    break
                if isinstance(part, TextPart):
                    draft.text.append(part.text)
                    draft.produced = True
                    sink(ev.TextDelta(part.text))
                elif isinstance(part, ReasoningPart):
                    draft.produced = True
                    sink(ev.ReasoningDelta(part.text))
                elif isinstance(part, ToolCallPart):
                    slot = draft.calls.get(part.index)
                    if slot is None:
                        draft.calls[part.index] = slot = [part.id, part.name, []]
                        draft.produced = True
                        sink(ev.ToolCallDelta(part.index, part.name or ""))
                    else:
                        slot[0] = slot[0] or part.id
                        slot[1] = slot[1] or part.name
                    slot[2].append(part.arguments)
                elif isinstance(part, ThinkingPart):
                    # Only complete, signed blocks are kept, and only for this turn (A7).
                    if part.signature or part.redacted_data:
                        draft.thinking.append(
                            ThinkingBlock(part.thinking, part.signature, part.redacted_data)
                        )
                elif isinstance(part, UsagePart):
                    draft.usage = part
                    self._record_usage(part)
                elif isinstance(part, FinishPart):
                    draft.finish = part.reason
        finally:
            # Closed here, on the worker's own thread, the moment the loop ends (a stop's
            # break included): the stream's cleanup releases its connection now rather than
            # whenever the generator happens to be collected (W5).
            close = getattr(parts, "close", None)
            if close is not None:
                close()

    def _record_usage(self, usage: UsagePart) -> None:
        self.usage.input_tokens += usage.input_tokens
        self.usage.output_tokens += usage.output_tokens
        provider = self.config.provider(self.provider_name)
        cost = call_cost(
            prices_for(provider.pricing, self.model_name),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            input_includes_cache=provider.kind != "anthropic",
        )
        if cost is not None:
            self.usage.cost_usd = (self.usage.cost_usd or 0.0) + cost
        if self.store is not None and self.session_id is not None:
            try:  # an append and a notify; after close it applies inline and may raise (S2, S6)
                self.store.queue_token_counts(
                    self.session_id,
                    model=self.model_name,
                    provider=self.provider_name,
                    route=safe_url(provider.base_url),  # no URL credentials (H5)
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens,
                    reasoning_tokens=usage.reasoning_tokens,
                    api_calls=1,
                    estimated_cost_usd=cost,
                )
            except Exception as exc:
                log.warning("token usage not saved: %s", exc)
            self.check_saving()
        self.sink(
            ev.UsageUpdated(
                usage.input_tokens,
                usage.output_tokens,
                self.usage.input_tokens,
                self.usage.output_tokens,
                cost,
                self.usage.cost_usd,
            )
        )

    # -- tools ----------------------------------------------------------------------------
    def _run_tools(self, calls: list[ToolCall]) -> None:
        from agent.tools.registry import ToolContext, ToolResult

        with self._state_lock:
            if self._stop.is_set():
                stopped = True
            else:
                stopped = False
                self._phase = "tools"
        # Read again per batch: the keys the environment holds now are the ones to withhold.
        self.secrets = self._read_secrets()
        context = ToolContext(
            workspace=self.workspace,
            approval_mode=self.config.agent.approval,
            shell_timeout=self.config.agent.shell_timeout_seconds,
            cancel=self._tool_cancel,
            hidden_env=self.secrets.hidden_env(),
            approvals=self.approvals,
        )
        try:
            for call in calls:
                if stopped or self._stop.is_set():
                    # Every call needs a result or the next request is malformed.
                    result = ToolResult(False, "Cancelled: the user stopped the turn.")
                    self._tool_result(call, result, 0.0, announce=False)
                    stopped = True
                    continue
                try:
                    args = call.parsed_arguments()
                except ValueError as exc:
                    args = None
                    result = ToolResult(
                        False, f"Invalid arguments for {call.name}: {exc}. Send a JSON object."
                    )
                summary = self.registry.summary(call.name, args or {})
                self.activity.touch()
                self.sink(ev.ToolStarted(call.id, call.name, args or {}, summary))
                started = time.monotonic()
                waited = [0.0]
                if args is not None:
                    context.approve = self._asking_for(call, waited)
                    result = self.registry.run(call.name, args, context)
                self.activity.touch()
                self._tool_result(call, result, time.monotonic() - started - waited[0])
        finally:
            with self._state_lock:
                if self._phase == "tools":
                    self._phase = "model"
        if stopped:
            raise TurnStopped

    def _asking_for(self, call: ToolCall, waited: list[float]) -> Callable[[Any], Any] | None:
        """The approver for `call`: tells the UI the call waits, and adds the wait to `waited`."""
        from agent.tools.approvals import Verdict

        if self.approve is None:
            return None
        approve = self.approve

        def ask(request: Any) -> Any:
            self.sink(ev.ToolAwaitingApproval(call.id, call.name))
            asked = time.monotonic()
            answer: Any = False
            try:
                answer = approve(request)
                return answer
            finally:
                wait = time.monotonic() - asked
                waited[0] += wait
                # The user's think time is not silence from the model or a tool.
                self.activity.touch()
                self.sink(ev.ToolApprovalAnswered(call.id, Verdict.of(answer).approved, wait))

        return ask

    def _tool_result(self, call: ToolCall, result: Any, duration: float, *, announce=True) -> None:
        # The one path of every tool result: what is stored, shown and sent next is redacted
        # the way errors are (a `cat .env`, an `env`) (H5).
        output = self.secrets.redact(result.output)
        message = Message("tool", output, tool_call_id=call.id, name=call.name)
        declined = bool(getattr(result, "declined", False))
        outcome = "declined" if declined else ("ok" if result.ok else "error")
        # Kept for the transcript of a resumed session (ok, error or declined, how long the
        # call itself took); providers only ever see the content (display metadata never
        # reaches a payload, D1).
        message.display_metadata = {
            "ok": bool(result.ok),
            "outcome": outcome,
            "duration": round(duration, 3),
        }
        self._append(message, persist=True)
        if announce:
            self.sink(
                ev.ToolFinished(call.id, call.name, result.ok, output, duration, declined=declined)
            )

    # -- persistence ----------------------------------------------------------------------
    def _append(self, message: Message, *, persist: bool = False) -> None:
        self.messages.append(message)
        if (persist or message.is_display) and not message.ephemeral:
            self._persist(message)

    def _persist(self, message: Message) -> None:
        if self.store is None or self.session_id is None:
            return
        future = self.store.enqueue_message(self.session_id, message.to_row())

        def _remember(done: Any, message: Message = message) -> None:
            if not done.cancelled() and done.exception() is None:
                message.db_id = done.result()

        future.add_done_callback(_remember)
        self.check_saving()

    def _flush_messages(self) -> None:
        if self.store is not None and self.session_id is not None:
            if not self._saving_waits():
                try:
                    self.store.flush_threadsafe(tokens=False)
                except Exception as exc:
                    log.warning("flush before the model call failed: %s", exc)
            self.check_saving()

    def _saving_waits(self) -> bool:
        """True while queued writes wait behind another process's lock.

        Then a flush would only spend another lock window before it failed: the writer
        retries on its own, and the turn goes on without waiting for it (H7).
        """
        return bool(getattr(self.store, "waiting_for_lock", False))

    def check_saving(self, reason: str | None = None) -> None:
        """Tell the user once, with the reason, that the session is not being saved (S7).

        Writes held up by a lock are not lost: that is said once too, as such (H7). The
        one teller of both, during a turn and (`reason`: what the store just reported)
        outside one.
        """
        if self._saving_waits():
            if not self._told_saving_waits:
                self._told_saving_waits = True
                self.sink(ev.SavingFailed(lock_wait_notice(self.store.path), waiting=True))
            return
        reason = reason or getattr(self.store, "last_write_error", None)
        if reason == str(StorageLockedError(getattr(self.store, "path", ""))):
            return  # a lock that has cleared since: its writes were retried, not lost
        if reason and not self._told_not_saved:
            self._told_not_saved = True
            self.sink(ev.SavingFailed(f"This session is not being saved: {reason}"))

    def close(self) -> None:
        """Release provider clients."""
        for provider in self._providers.values():
            provider.close()
        self._providers.clear()


def backoff_delay(attempt: int, base: float, retry_after: float | None) -> float:
    """Exponential backoff with jitter, never shorter than Retry-After (W8)."""
    delay = base * (2 ** (attempt - 1))
    delay = min(delay, 60.0) * (0.5 + random.random() / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay
