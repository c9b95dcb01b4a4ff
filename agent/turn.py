"""One user turn, from its message to its seal: the tool loop around the model (A1-A6, T1-T7).

The Agent (agent/loop.py) holds the session, the controls and the parts; a `Turn` is made
for each `run_turn` and runs it through the `TurnHost` door: the model loop, its tool
batches, a stop or redirect between calls, and the one terminal path every exit takes
(tidy, flush, checkpoint, seal and drain the steers).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from agent import events as ev
from agent import recovery
from agent.budget import BudgetStop, begin_spending, guard_call
from agent.compaction import ContextCompressor
from agent.config import Config
from agent.context_gauge import prompt_tokens
from agent.control import TurnControl, TurnStopped
from agent.drafts import Draft
from agent.inbox import Inbox
from agent.kinds import ApprovalMode, CallPurpose, ErrorKind, TurnStatus
from agent.liveness import ActivityClock, CodeSkewGuard
from agent.log_context import session_var
from agent.messages import REQUEST_FAILED, Message, ToolCall
from agent.model_call import call_model
from agent.models import estimate_request
from agent.overflow import compact_after_overflow
from agent.ports import ApprovalPolicy, CompactionHost
from agent.probes import AgentProbes
from agent.project_context import ProjectContext
from agent.prompts import EMPTY_ANSWER_NUDGE
from agent.providers.base import ChatRequest, Provider, UsagePart
from agent.providers.errors import ProviderError, redact, summarize
from agent.secrets import Secrets
from agent.session_state import SessionState
from agent.session_writer import SessionWriter
from agent.tool_batch import ToolBatch
from agent.turn_endings import (
    TurnResult,
    budget_spent,
    cut_off_before_answer,
    ending_row,
    internal_error,
    unanswered,
)
from agent.turn_hooks import HOOK_NOTE_KIND, TurnHooks
from agent.turn_parts import load_images, take_user_message, tool_context
from agent.usage import UsageRecorder, estimated_usage
from storage.errors import StorageError, sentence

if TYPE_CHECKING:
    from pathlib import Path

    from agent.checkpoints.checkpointer import Checkpointer
    from agent.hooks.engine import Hooks
    from agent.tools.approvals import ApprovalMemory
    from agent.tools.permissions import Permissions
    from agent.tools.registry import ToolRegistry
    from agent.tools.sandbox import Sandbox

log = logging.getLogger("hermes_tui.agent")


class TurnHost(CompactionHost, Protocol):
    """What a turn uses of its agent: the parts, the session, and the few acts it asks for
    (a turn hands its agent to the compressor, so it is a compaction's host as well)."""

    config: Config
    sink: ev.Sink
    workspace: Path
    approve: ApprovalPolicy | None
    approvals: ApprovalMemory
    permissions: Permissions
    hooks: Hooks
    approval_mode: ApprovalMode
    registry: ToolRegistry
    sandbox: Sandbox
    inbox: Inbox
    state: SessionState
    writer: SessionWriter
    probes: AgentProbes
    control: TurnControl
    activity: ActivityClock
    compressor: ContextCompressor
    skew_guard: CodeSkewGuard
    secrets: Secrets
    context: ProjectContext
    checkpointer: Checkpointer | None
    owns_checkpoints: bool
    usage_recorder: UsageRecorder

    @property
    def messages(self) -> list[Message]: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def provider_name(self) -> str: ...
    @property
    def model_name(self) -> str: ...
    @property
    def context_window(self) -> int | None: ...

    def provider(self) -> Provider: ...
    def request(self) -> ChatRequest: ...
    def record_usage(self, usage: UsagePart, purpose: CallPurpose = ...) -> None: ...
    def append(self, message: Message, *, persist: bool = False) -> None: ...
    def ensure_session(self, first_text: str) -> None: ...
    def ask_server(self) -> None: ...
    def save_context(self) -> None: ...
    def read_secrets(self) -> Secrets: ...
    def keep_metadata(self, key: str, value: Any) -> None: ...
    def add_display_row(self, kind: str, metadata: dict[str, Any]) -> None: ...


class PromptBlocked(Exception):
    """A prompt hook blocked the user's message (N4); the sentence says which and why."""


class Turn:
    """One turn of `host`'s session; `run` blocks the calling thread until it has ended."""

    def __init__(self, host: TurnHost) -> None:
        self.host = host
        self.result = TurnResult(TurnStatus.OK)
        self._overflow_compacted = False  # this turn compacted after a context overflow
        self.asked: Message | None = None
        """The turn's own user message, once it is taken (and queued for the database)."""
        self.hooks = TurnHooks.of(host)
        self._sent_back = 0  # times turn_end hooks sent the agent back this turn (N4)

    def run(
        self, text: str, shown: str | None, note_kind: str | None, *, expected: bool = False
    ) -> TurnResult:
        """The turn of the user's `text` (`shown`: what they typed, when the model reads
        another text), through every way it can end (`expected`: announced by
        `expect_turn`, so a stop on its way here holds)."""
        host, result = self.host, self.result
        if not host.control.begin_turn(expected=expected):
            # Stopped on its way here (Z1): no request, nothing written, no generation
            # opened; the typed text goes back to the user (a recovery note was never typed).
            host.sink(ev.stopped_on_the_way())
            return TurnResult(TurnStatus.STOPPED, unsent=None if note_kind else shown or text)
        host.activity.reset()
        host.inbox.open_generation()
        host.compressor.begin_turn()
        log_token = None
        typed = text if shown is None else shown
        try:
            host.ask_server()
            host.ensure_session(typed)
            # C6: every log record of this turn, on any thread it spawns, names the session.
            log_token = session_var.set(host.session_id)
            self._begin(text, shown, note_kind)
            self._loop()
        except TurnStopped:
            result.status = TurnStatus.STOPPED
        except BudgetStop as exc:
            self._capped(str(exc))
        except PromptBlocked as exc:
            # The user sees why, and what they typed goes back to them (N4).
            self._fail(str(exc), ErrorKind.HOOK)
            result.unsent = typed
        except ProviderError as exc:
            self._fail(summarize(exc), exc.kind)  # redacted (K3)
            self._withhold_unanswered(exc.kind)
        except StorageError as exc:
            # A sentence, not an internal error (H7): the store could not start the turn
            # (create the session); text it never took goes back to the user.
            log.warning("turn ended by a storage failure: %s", exc)
            self._fail(sentence(exc), ErrorKind.STORAGE)
            if self.asked is None:
                result.unsent = typed
        except Exception as exc:  # never let a bug kill the worker silently
            log.exception("turn failed")
            self._fail(redact(internal_error(exc, host.skew_guard)), ErrorKind.INTERNAL)
            self._withhold_unanswered(ErrorKind.INTERNAL)
        finally:
            self._finish()
            if log_token is not None:
                session_var.reset(log_token)
        return result

    def _begin(self, text: str, shown: str | None, note_kind: str | None) -> None:
        """Announce the turn, take the user's message, start its checkpoint."""
        host = self.host
        self.result.session_id = host.session_id
        host.sink(ev.TurnStarted(host.session_id or "", text if shown is None else shown))
        self._close_unanswered_calls()
        context = ""
        if note_kind is None:  # a typed note (the recovery note) is the app's, not a prompt
            resumed = any(m.role == "user" for m in host.messages)
            context, blocked = self.hooks.at_start(
                text if shown is None else shown, resumed=resumed
            )
            if blocked is not None:
                raise PromptBlocked(blocked)
        self.asked = take_user_message(host, text, shown, note_kind, context)
        begin_spending(host)
        host.context.refresh(in_session=True)
        if host.checkpointer is not None and host.owns_checkpoints:
            host.checkpointer.begin_turn(host.session_id, self.asked)
        # MCP servers still starting get a short, visible wait (M1).
        host.registry.begin_turn(host.sink, lambda: host.control.stopped)

    def _close_unanswered_calls(self) -> None:
        """Give tool calls left without a result by a crash one, so the next request is valid."""
        for call in recovery.unanswered_calls(self.host.messages):
            message = Message(
                "tool", recovery.INTERRUPTED_TOOL_RESULT, tool_call_id=call.id, name=call.name
            )
            self.host.append(message, persist=True)

    # -- the loop ---------------------------------------------------------------------------
    def _loop(self) -> None:
        host = self.host
        max_iterations = host.config.agent.max_iterations
        nudged = False
        iteration = 0
        while True:
            if host.control.stopped:
                raise TurnStopped
            if iteration >= max_iterations:
                self.result.status = TurnStatus.BUDGET
                self.result.error = budget_spent(max_iterations)
                host.sink(ev.Notice(self.result.error, "warning"))
                return
            self._deliver_steers()
            iteration += 1
            # S8: what the model will see is on disk before it is sent.
            host.writer.flush(host.session_id, tokens=False, when="before the model call")
            host.probes.before_model_call()
            compacted = host.compressor.maybe_compact(host)
            if compacted is not None and compacted.reason == "budget":
                raise BudgetStop(compacted.message)
            draft = self._call_model_fitting(iteration)
            if self._interrupted(draft):
                iteration -= 1  # a redirect re-runs the same iteration (T5)
                continue
            if not draft.visible_text.strip() and not draft.calls:
                if draft.finish == "length":
                    # Cut off before any answer (often: reasoning took the whole budget).
                    # Not an empty answer: asking again would spend the same budget the
                    # same way (A6 is for a model that chose to say nothing).
                    self._cut_off_before_answer(draft)
                    return
                if nudged:
                    raise ProviderError(
                        ErrorKind.EMPTY,
                        "The model returned an empty answer twice: try again, or switch "
                        "model with /model.",
                    )
                nudged = True
                host.append(Message("user", EMPTY_ANSWER_NUDGE, ephemeral=True))
                continue
            calls = self._answer(draft)
            if not calls:
                if self.result.status == TurnStatus.TRUNCATED or not self._sent_back_by_hook(draft):
                    return
                continue
            plan = self._run_tools(calls)
            host.probes.after_tool_batch()
            if plan is not None:
                # The plan was shown and waits for the user's answer: it is the turn's
                # answer (what `run --mode plan --final` prints), and no model call follows.
                self.result.text = plan
                return

    def _sent_back_by_hook(self, draft: Draft) -> bool:
        """True when a turn_end hook sends the agent back (its feedback is then the next
        user message, a typed note), at most `hooks.turn_end_limit` times a turn (N4)."""
        feedback = self.hooks.at_end(draft.visible_text, self._sent_back)
        if feedback is None:
            return False
        self._sent_back += 1
        meta = recovery.note_metadata(HOOK_NOTE_KIND)
        note = Message("user", self.host.secrets.redact(feedback), display_metadata=meta)
        self.host.append(note, persist=True)
        return True

    def _interrupted(self, draft: Draft) -> bool:
        """After a model call: raise TurnStopped on a stop; True when a redirect re-runs it."""
        host = self.host
        redirect = host.control.take_redirect()
        if host.control.stopped:
            self._keep_partial(draft)
            self.result.text = draft.visible_text
            if redirect is not None:
                # Stop wins over a concurrent redirect, but its text is never lost (T5/T6).
                host.inbox.steer(redirect)
            raise TurnStopped
        if redirect is None:
            return False
        self._keep_partial(draft)
        host.append(Message("user", redirect), persist=True)
        host.sink(ev.DisplayRow("redirect", {"text": redirect}))
        return True

    def _answer(self, draft: Draft) -> list[ToolCall]:
        """Keep the model's answer; returns its tool calls to run (none: the turn ends)."""
        host = self.host
        text = draft.visible_text
        truncated = draft.finish == "length"
        calls = [] if truncated else draft.tool_calls(host.state.ids)
        message = Message("assistant", text, tool_calls=calls, thinking=draft.thinking)
        host.append(message, persist=True)
        host.sink(ev.AssistantMessage(text, tuple(c.to_dict() for c in calls)))
        self.result.text = text
        if truncated:
            self.result.status = TurnStatus.TRUNCATED
            self.result.error = (
                draft.capped or "The answer was cut off at the model's output limit."
            )
            host.sink(ev.Notice(self.result.error, "warning"))
        return calls

    def _cut_off_before_answer(self, draft: Draft) -> None:
        """End the turn on an output limit reached before any text or tool call (the model's,
        or the app's own bound on one call's reasoning: H10)."""
        host = self.host
        name = host.provider_name
        self.result.status = TurnStatus.TRUNCATED
        self.result.error = draft.capped or cut_off_before_answer(
            name, host.config.provider(name), draft.reasoned
        )
        host.sink(ev.Notice(self.result.error, "warning"))

    def _deliver_steers(self) -> None:
        """Deliver accepted steers as user-authored guidance at a safe boundary (T2)."""
        for text in self.host.inbox.take():
            self.host.append(Message("user", text), persist=True)
            self.host.sink(ev.DisplayRow("steer", {"text": text}))

    def _keep_partial(self, draft: Draft) -> None:
        """Keep the visible partial answer after a stop or redirect: never reasoning (R2)."""
        text = draft.visible_text
        if text.strip():
            self.host.append(Message("assistant", text), persist=True)
            self.host.sink(ev.AssistantMessage(text, ()))

    def _run_tools(self, calls: list[ToolCall]) -> str | None:
        """Run a batch; returns the plan when propose_plan ended the turn on it (N1)."""
        host = self.host
        entered = host.control.enter_tools()
        try:
            # Read again per batch: the keys the environment holds now are the ones to withhold.
            host.secrets = host.read_secrets()
            context = tool_context(host)
            batch = ToolBatch(
                registry=host.registry,
                control=host.control,
                context=context,
                approve=host.approve,
                sink=host.sink,
                touch=host.activity.touch,
                redact=host.secrets.redact,
                keep=lambda message: host.append(message, persist=True),
                hooks=self.hooks,
            )
            batch.run(calls, stopped=not entered)
            ended_by_plan = context.ended_by_plan
            # A subdirectory's instruction file joins the first time a tool touches it (P1).
            host.context.touched(calls)
        finally:
            host.control.leave_tools()
        return ended_by_plan

    # -- model calls --------------------------------------------------------------------------
    def _call_model_fitting(self, iteration: int) -> Draft:
        """A model call; when the server says the context is full, compact once and retry."""
        try:
            return self._call_model(iteration)
        except ProviderError as exc:
            if exc.kind != ErrorKind.CONTEXT_LENGTH or not self._compact_after_overflow(exc):
                raise
        return self._call_model(iteration)

    def _compact_after_overflow(self, exc: ProviderError) -> bool:
        """Learn the window the server named; compact once a turn; True when it committed."""
        host = self.host
        committed = compact_after_overflow(
            exc,
            provider=host.config.provider(host.provider_name),
            model=host.model_name,
            compressor=host.compressor,
            host=host,
            compacted_this_turn=self._overflow_compacted,
        )
        self._overflow_compacted = True  # once a turn, whatever came of it
        return committed

    def _call_model(self, iteration: int) -> Draft:
        host = self.host
        load_images(host)
        return call_model(
            host.provider(),
            host.request,
            host.control,
            host.config.agent,
            started=ev.RequestStarted(iteration, host.model_name, host.provider_name),
            sink=host.sink,
            touch=host.activity.touch,
            on_usage=self._turn_usage,
            estimate=self._estimate_usage,
            before_send=self._guard,
        )

    def _guard(self, request: ChatRequest) -> None:
        """Before the call is sent: hold it to the spend caps and the size question ($2)."""
        guard_call(self.host, self.host.compressor.gauge.project(estimate_request(request)))

    def _turn_usage(self, usage: UsagePart) -> None:
        """A turn call's usage: accounted, and (when the server counted it) a gauge sample."""
        host = self.host
        if not usage.estimated:
            # The messages are those of the request still streaming: the estimate is its own.
            kind = host.config.provider(host.provider_name).kind
            reported = prompt_tokens(usage, input_includes_cache=kind != "anthropic")
            host.compressor.gauge.observe(reported, estimate_request(host.request()))
        host.record_usage(usage)

    def _estimate_usage(self, draft: Draft) -> UsagePart:
        """A call the server sent no usage for: its prompt as the provider would count it (the
        last report, scaled) and the output it streamed, marked estimated."""
        prompt = self.host.compressor.gauge.project(estimate_request(self.host.request()))
        return estimated_usage(prompt, draft.streamed_chars)

    # -- the ending ---------------------------------------------------------------------------
    def _fail(self, error: str, kind: ErrorKind) -> None:
        self.result.status = TurnStatus.ERROR
        self.result.error, self.result.error_kind = error, kind
        self.host.sink(ev.TurnError(error, kind))

    def _capped(self, sentence: str) -> None:
        """A call not sent for a spend cap ($2): the turn ends saying so; its message no
        model answered is withheld and offered back, to send again once the cap is raised."""
        self.result.status = TurnStatus.CAPPED
        self.result.error, self.result.error_kind = sentence, ErrorKind.SPEND_CAP
        self.host.sink(ev.TurnError(sentence, ErrorKind.SPEND_CAP))
        self._withhold_unanswered(ErrorKind.SPEND_CAP)

    def _withhold_unanswered(self, kind: ErrorKind) -> None:
        """A failed turn's user messages that no model answered stay in the history, marked,
        and are never merged into a later request (T7): a `request_failed` row follows them."""
        found = unanswered(self.host.messages, self.asked)
        if not found:
            return
        for message in found:
            message.withheld = True
        meta: dict[str, Any] = {
            "withheld": len(found),
            "error": self.result.error or "",
            "kind": str(kind),
        }
        self.host.append(Message("assistant", display_kind=REQUEST_FAILED, display_metadata=meta))
        self.host.sink(ev.DisplayRow(REQUEST_FAILED, meta))
        self.result.withheld = "\n\n".join(m.content for m in reversed(found))

    def _finish(self) -> None:
        """The one terminal path of every exit: tidy, flush, seal and drain steers (T3)."""
        host, result = self.host, self.result
        host.state.messages = [m for m in host.messages if not m.ephemeral]
        for message in host.messages:
            message.thinking = []
        self._mark_ending()  # before the flush: saved with the rest of the turn
        host.save_context()
        host.writer.flush(host.session_id, tokens=True, when="at turn end")
        if host.checkpointer is not None and host.owns_checkpoints:
            # After the flush: the closing snapshot (a git process) does not slow the
            # turn's own last writes; its row is queued behind them.
            host.checkpointer.end_turn()
        leftover = host.control.end()
        if leftover is not None:
            # A redirect that arrived after the last model call returns as a pending steer.
            host.inbox.steer(leftover)
        host.probes.before_seal()
        result.pending_steer = host.inbox.seal_and_drain()
        if result.status == TurnStatus.OK and host.control.stopped:
            result.status = TurnStatus.STOPPED
        host.sink(ev.TurnFinished(result.status, result.text, result.pending_steer))

    def _mark_ending(self) -> None:
        """A stopped or failed turn leaves a display row (D1), so a resumed transcript shows
        how it ended; the live one shows it from the events."""
        host = self.host
        if host.session_id is None:
            return
        last = host.messages[-1] if host.messages else None
        row = ending_row(self.result, host.control.stopped, last)
        if row is not None:
            host.append(row)
