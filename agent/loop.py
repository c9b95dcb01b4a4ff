"""The Agent: run_turn / steer / redirect / stop, and the tool loop around the model.

The parts around the loop live in their own modules: the control state (agent/control.py),
one model call with its retries (agent/model_call.py), the streamed output (agent/drafts.py),
usage (agent/usage.py), the session's writes (agent/session_writer.py) and the tool batch
(agent/tool_batch.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent import recovery
from agent.compaction import (
    CompactionResult,
    ContextCompressor,
    is_summary_row,
    log_session,
    session_var,
)
from agent.config import Config, ConfigError, split_model_ref
from agent.confinement import decide_sandbox, make_checkpointer
from agent.context_gauge import prompt_tokens
from agent.control import TurnControl, TurnStopped
from agent.drafts import Draft
from agent.inbox import Inbox
from agent.kinds import CallPurpose, ErrorKind, Phase, TurnStatus
from agent.liveness import ActivityClock, CodeSkewGuard, raised_in_own_code
from agent.messages import (
    REQUEST_FAILED,
    TURN_FAILED,
    TURN_STOPPED,
    Message,
    ToolCall,
    ToolCallIds,
    mark_withheld,
)
from agent.model_call import call_model
from agent.models import context_window_for, estimate_request
from agent.ports import ApprovalPolicy, SessionStore
from agent.project_context import ProjectContext
from agent.prompts import EMPTY_ANSWER_NUDGE, system_prompt
from agent.providers.base import ChatRequest, Provider, UsagePart
from agent.providers.discovery import SERVERS
from agent.providers.errors import ProviderError, redact, register_secret, summarize
from agent.secrets import Secrets
from agent.server_check import ask_server, check_model
from agent.session_writer import SessionWriter
from agent.tool_batch import ToolBatch
from agent.usage import CONTEXT_KEY, Usage, UsageRecorder, estimated_usage
from storage.errors import StorageError, sentence

if TYPE_CHECKING:
    from agent.tools.registry import ToolRegistry

log = logging.getLogger("hermes_tui.agent")


COOLDOWN_KEY = "compaction_cooldown"
"""The session metadata key that keeps compaction's cooldown across runs (C3)."""


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
    error_kind: str | None = None


class Agent:
    """A tool-using agent over one session; `run_turn` blocks, the rest is thread-safe."""

    def __init__(
        self,
        config: Config,
        store: SessionStore | None = None,
        sink: ev.Sink | None = None,
        *,
        workspace: Path | str | None = None,
        approve: ApprovalPolicy | None = None,
        registry: ToolRegistry | None = None,
    ) -> None:
        from agent.tools.approvals import ApprovalMemory
        from agent.tools.registry import default_registry

        self.config = config
        self.sink: ev.Sink = sink or (lambda _event: None)
        self.workspace = Path(workspace or os.getcwd()).resolve()
        self.approve = approve
        # The session's "always" answers: kept with the session, forgotten when it changes.
        self.approvals = ApprovalMemory()
        self.registry = registry or default_registry()
        self.sandbox = decide_sandbox(config, self.registry)
        self.inbox = Inbox()
        self.messages: list[Message] = []
        self.session_id: str | None = None
        self.session_metadata: dict[str, Any] = {}
        self.model_ref = config.model
        self.writer = SessionWriter(store, lambda event: self.sink(event))
        self.usage_recorder = UsageRecorder()
        self.hooks: dict[str, Callable[[], None]] = {}
        self.control = TurnControl()
        self.activity = ActivityClock(self._stamp_heartbeat)
        self.compressor = ContextCompressor(config.compression, on_change=self._save_cooldown)
        self.skew_guard = CodeSkewGuard()
        self.secrets = self._read_secrets()
        # Instruction files and @ mentions (P1, P2); display rows kept like any other.
        self.context = ProjectContext(
            self.workspace, config.home, lambda event: self.sink(event), self._append
        )
        self._ids = ToolCallIds()
        self._providers: dict[str, Provider] = {}
        self._turn_lock = threading.Lock()
        self._asked: set[str] = set()  # model refs whose server was asked (item 6)
        self._overflow_compacted = False  # this turn compacted after a context overflow
        self.checkpointer = make_checkpointer(
            config, self.workspace, self.store, lambda event: self.sink(event)
        )

    def _read_secrets(self) -> Secrets:
        """Every configured key, known to redaction everywhere (errors, logs, tool output)."""
        secrets = Secrets.of(self.config)
        register_secret(*secrets.values)
        return secrets

    # -- what the agent is working with ----------------------------------------------------
    @property
    def store(self) -> SessionStore | None:
        """The session store, or None when nothing is saved."""
        return self.writer.store

    @property
    def usage(self) -> Usage:
        """The session's running token totals in this process."""
        return self.usage_recorder.totals

    @usage.setter
    def usage(self, totals: Usage) -> None:
        self.usage_recorder.totals = totals

    @property
    def provider_name(self) -> str:
        """The provider part of the current model reference."""
        return split_model_ref(self.model_ref)[0]

    @property
    def model_name(self) -> str:
        """The model part of the current model reference."""
        return split_model_ref(self.model_ref)[1]

    @property
    def context_window(self) -> int | None:
        """The current model's context window (None: unknown): compaction's and the bar's."""
        return context_window_for(self.config, self.model_ref)

    def missing_key(self) -> str | None:
        """The sentence naming the key the current model's provider lacks, or None."""
        return self.config.missing_key(self.model_ref)

    @property
    def busy(self) -> bool:
        """True while a turn (or a /compact) runs."""
        return self.control.phase != Phase.IDLE

    @property
    def phase(self) -> Phase:
        """What the agent is doing now."""
        return self.control.phase

    # -- session ----------------------------------------------------------------------------
    def new_session(self) -> None:
        """Forget the current session; the next turn starts a fresh one."""
        self.session_id = None
        self.messages = []
        self._ids = ToolCallIds()
        self.usage = Usage()
        self.compressor.gauge.reset()
        self.approvals.clear()
        self.session_metadata = {}
        self.compressor.restore_cooldown(None)
        self.context.new_session()

    def attach_session(
        self, session_id: str, rows: list[dict[str, Any]], session: dict[str, Any] | None = None
    ) -> None:
        """Switch to a stored session from its persisted rows (no I/O here) (D3).

        `session`, its stored row, carries the totals the usage counts on from, and its
        metadata (compaction's cooldown).
        """
        self.session_id = session_id
        # Compacted rows are history for the transcript, never for the model (C, D3).
        self.messages = [Message.from_row(r) for r in rows if not r.get("compacted")]
        mark_withheld(self.messages)
        self._ids = ToolCallIds.from_history(self.messages)
        self.usage = Usage.of_session(session)
        self.compressor.gauge.reset()
        self.approvals.clear()
        self.session_metadata = dict((session or {}).get("metadata") or {})
        # The cooldown belongs to the session: it survives across runs (C3).
        self.compressor.restore_cooldown(self.session_metadata.get(COOLDOWN_KEY))
        self.context.attach_rows(rows)

    def resume(self, ref: str) -> dict[str, Any]:
        """Blocking resume by id or title through the store; returns the session row."""
        store = self.store
        if store is None:
            raise ValueError("resuming needs a session store")
        session = store.call(store.find_session, ref)
        if session is None:
            raise LookupError(f"No session matches {ref!r}: see `hermes-tui sessions list`.")
        rows = store.call(store.load_messages, session["id"], include_compacted=False)
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

    def use_workspace(self, workspace: Path | str) -> None:
        """Run tools in `workspace` from now on (a resumed session's own folder)."""
        self.workspace = Path(workspace).resolve()
        self.approvals.clear()  # "always" answers were given for the other folder
        if self.checkpointer is not None:  # checkpoints belong to a workspace (X2)
            self.checkpointer.close()
            self.checkpointer = make_checkpointer(
                self.config, self.workspace, self.store, lambda event: self.sink(event)
            )

    def set_model(self, ref: str) -> None:
        """Switch model; records a `model_switch` display row in a live session (D1)."""
        provider, model = split_model_ref(ref)
        self.config.provider(provider)
        previous, self.model_ref = self.model_ref, ref
        if previous != ref:
            self.compressor.gauge.reset()  # another model counts tokens its own way
        if self.session_id is not None and previous != ref:
            self.add_display_row("model_switch", {"from": previous, "to": ref})
            self.writer.update_session(self.session_id, model=model, provider=provider)

    def add_display_row(self, kind: str, metadata: dict[str, Any]) -> None:
        """Keep and show a typed display row (a ◈ marker) in the live session (D1)."""
        if self.session_id is None:
            return
        self._append(Message("assistant", display_kind=kind, display_metadata=metadata))
        self.sink(ev.DisplayRow(kind, metadata))

    # -- cross-thread controls ----------------------------------------------------------------
    def steer(self, text: str) -> bool:
        """Offer guidance to the running turn; False means no turn took it (queue it)."""
        return self.inbox.steer(text)

    def redirect(self, text: str) -> bool:
        """Cancel the in-flight model request and re-run with `text` appended (T5).

        During tools it degrades to a steer. Returns False when nothing took the text (no
        turn, or a stop already won), so the caller queues it.
        """
        return self.control.redirect(text, self.inbox.steer)

    def expect_turn(self) -> None:
        """A turn will start on a worker soon: a stop from now on stops it, even one that
        lands before the worker runs (Z1)."""
        self.control.expect_turn()

    def stop(self) -> None:
        """End the running turn promptly, from any thread (T6)."""
        self.control.stop()
        self.compressor.cancel()

    def _hook(self, name: str) -> None:
        hook = self.hooks.get(name)
        if hook is not None:
            hook()

    # -- the turn -------------------------------------------------------------------------
    def run_turn(
        self,
        text: str,
        *,
        note_kind: str | None = None,
        shown: str | None = None,
        model: str | None = None,
    ) -> TurnResult:
        """Run one user turn to its end; blocks the calling thread.

        `note_kind` types the user message (e.g. "recovery") in the same insert as its text.
        `shown` is what the user typed when the model reads another text (a custom command's
        prompt); `model` (provider:model) runs this turn alone on another model.
        """
        expected = self.control.take_expected()
        skew = self.skew_guard.skew_message()
        if skew is not None:
            # Refused before anything is written: the text goes back to the user (L4).
            self.sink(ev.TurnError(skew, ErrorKind.UPGRADED))
            return TurnResult(TurnStatus.ERROR, error=skew, unsent=text)
        no_key = self.missing_key()
        if no_key is not None:
            # A hosted provider without a key: said before any request or write, never a
            # silent demo (the text goes back to the user).
            self.sink(ev.TurnError(no_key, ErrorKind.CONFIG))
            return TurnResult(TurnStatus.ERROR, error=no_key, unsent=shown or text)
        unknown = self._unknown_model(model)
        if unknown is not None:
            self.sink(ev.TurnError(unknown, ErrorKind.CONFIG))
            return TurnResult(TurnStatus.ERROR, error=unknown, unsent=shown or text)
        with self._turn_lock, self._turn_model(model):
            if not self.control.begin_turn(expected=expected):
                # Stopped on its way here (Z1): no request, nothing written, no generation
                # opened; the typed text goes back to the user (a recovery note was never typed).
                self.sink(ev.TurnFinished(TurnStatus.STOPPED, ""))
                return TurnResult(TurnStatus.STOPPED, unsent=None if note_kind else shown or text)
            self.activity.reset()
            self.inbox.open_generation()
            self.compressor.begin_turn()
            self._overflow_compacted = False
            result = TurnResult(TurnStatus.OK)
            log_token = None
            taken = False  # the user message is in the turn (and queued for the database)
            asked: Message | None = None  # the turn's own user message
            try:
                self._ask_server()
                typed = text if shown is None else shown
                self._ensure_session(typed)
                # C6: every log record of this turn, on any thread it spawns, names the session.
                log_token = session_var.set(self.session_id)
                result.session_id = self.session_id
                self.sink(ev.TurnStarted(self.session_id or "", typed))
                self._close_unanswered_calls()
                asked = self._take_user_message(text, shown, note_kind)
                taken = True
                self.context.refresh(in_session=True)
                if self.checkpointer is not None:
                    self.checkpointer.begin_turn(self.session_id, asked)
                # MCP servers still starting get a short, visible wait (M1).
                self.registry.begin_turn(self.sink, lambda: self.control.stopped)
                self._loop(result)
            except TurnStopped:
                result.status = TurnStatus.STOPPED
            except ProviderError as exc:
                self._fail(result, summarize(exc), exc.kind)  # redacted (K3)
                self._withhold_unanswered(asked, result, exc.kind)
            except StorageError as exc:
                # A sentence, not an internal error (H7): the store could not start the turn
                # (create the session); text it never took goes back to the user.
                log.warning("turn ended by a storage failure: %s", exc)
                self._fail(result, sentence(exc), ErrorKind.STORAGE)
                if not taken:
                    result.unsent = text if shown is None else shown
            except Exception as exc:  # never let a bug kill the worker silently
                log.exception("turn failed")
                self._fail(result, redact(self._internal_error(exc)), ErrorKind.INTERNAL)
                self._withhold_unanswered(asked, result, ErrorKind.INTERNAL)
            finally:
                self._finish_turn(result)
                if log_token is not None:
                    session_var.reset(log_token)
            return result

    def _take_user_message(self, text: str, shown: str | None, note_kind: str | None) -> Message:
        """Append the user's message, its `@path` mentions attached (P2), show them; return it."""
        meta = recovery.note_metadata(note_kind) if note_kind else None
        message, attached = self.context.user_message(
            text, shown=shown, metadata=meta, redact=self.secrets.redact, window=self.context_window
        )
        self._append(message, persist=True)
        if attached:
            self.sink(ev.InputAttached(attached))
        return message

    def _unknown_model(self, model: str | None) -> str | None:
        """Why `model` cannot run a turn (not provider:model, or no such provider), or None."""
        if model is None:
            return None
        try:
            self.config.provider(split_model_ref(model)[0])
        except ConfigError as exc:
            return str(exc)
        return None

    @contextlib.contextmanager
    def _turn_model(self, model: str | None) -> Iterator[None]:
        """Run the block on `model` (checked by `_unknown_model`), then on the session's."""
        if model is None:
            yield
            return
        previous, self.model_ref = self.model_ref, model
        try:
            yield
        finally:
            self.model_ref = previous

    def refresh_instructions(self) -> None:
        """Read the instruction files now (a session starts); notices go to the sink (P1)."""
        self.context.refresh(in_session=self.session_id is not None)

    def _fail(self, result: TurnResult, error: str, kind: str) -> None:
        result.status = TurnStatus.ERROR
        result.error, result.error_kind = error, str(kind)
        self.sink(ev.TurnError(error, kind))

    def _withhold_unanswered(self, first: Message | None, result: TurnResult, kind: str) -> None:
        """A failed turn's user messages that no model answered stay in the history, marked,
        and are never merged into a later request (T7): a `request_failed` row follows them.

        `first` is the turn's own user message: nothing before it is this turn's to withhold
        (a compaction may have moved it, so it is found by identity, not by position).
        """
        unanswered: list[Message] = []
        for message in reversed(self.messages):
            if message.is_display or message.ephemeral:
                continue
            if message.role != "user" or is_summary_row(message):
                break  # C5: a row that carries a compaction summary is never withheld
            unanswered.append(message)
            if message is first:
                break
        if first is None or all(m is not first for m in unanswered):
            return
        for message in unanswered:
            message.withheld = True
        meta = {"withheld": len(unanswered), "error": result.error or "", "kind": str(kind)}
        self._append(Message("assistant", display_kind=REQUEST_FAILED, display_metadata=meta))
        self.sink(ev.DisplayRow(REQUEST_FAILED, meta))
        result.withheld = "\n\n".join(m.content for m in reversed(unanswered))

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
        self.writer.update_session(self.session_id, last_activity_at=wall_time)

    def _finish_turn(self, result: TurnResult) -> None:
        """The one terminal path of every exit: tidy, flush, seal and drain steers (T3)."""
        self.messages = [m for m in self.messages if not m.ephemeral]
        for message in self.messages:
            message.thinking = []
        self._mark_ending(result)  # before the flush: saved with the rest of the turn
        self._save_context()
        self.writer.flush(self.session_id, tokens=True, when="at turn end")
        if self.checkpointer is not None:
            # After the flush: the closing snapshot (a git process) does not slow the
            # turn's own last writes; its row is queued behind them.
            self.checkpointer.end_turn()
        leftover = self.control.end()
        if leftover is not None:
            # A redirect that arrived after the last model call returns as a pending steer.
            self.inbox.steer(leftover)
        self._hook("before_seal")
        result.pending_steer = self.inbox.seal_and_drain()
        if result.status == TurnStatus.OK and self.control.stopped:
            result.status = TurnStatus.STOPPED
        self.sink(ev.TurnFinished(result.status, result.text, result.pending_steer))

    def _mark_ending(self, result: TurnResult) -> None:
        """A stopped or failed turn leaves a display row (D1), so a resumed transcript shows
        how it ended; the live one shows it from the events."""
        if self.session_id is None:
            return
        stopped = result.status == TurnStatus.OK and self.control.stopped
        if result.status == TurnStatus.STOPPED or stopped:
            self._append(Message("assistant", display_kind=TURN_STOPPED, display_metadata={}))
            return
        last = self.messages[-1] if self.messages else None
        if (
            result.status != TurnStatus.ERROR
            or result.error_kind == ErrorKind.STORAGE  # the row could not be saved either
            or (last is not None and last.display_kind == REQUEST_FAILED)  # says it already
        ):
            return
        meta = {"error": result.error or "", "kind": result.error_kind or ""}
        self._append(Message("assistant", display_kind=TURN_FAILED, display_metadata=meta))

    def _ensure_session(self, first_text: str) -> None:
        if self.session_id is not None:
            return
        title = " ".join(first_text.split())[:60]
        store = self.store
        if store is None:
            self.session_id = uuid.uuid4().hex[:12]
            return
        row = store.call(
            store.create_session,
            model=self.model_name,
            provider=self.provider_name,
            workspace=str(self.workspace),
            title=title,
        )
        self.session_id = row["id"]

    def _close_unanswered_calls(self) -> None:
        """Give tool calls left without a result by a crash one, so the next request is valid."""
        for call in recovery.unanswered_calls(self.messages):
            message = Message(
                "tool", recovery.INTERRUPTED_TOOL_RESULT, tool_call_id=call.id, name=call.name
            )
            self._append(message, persist=True)

    def _loop(self, result: TurnResult) -> None:
        max_iterations = self.config.agent.max_iterations
        nudged = False
        iteration = 0
        while True:
            if self.control.stopped:
                raise TurnStopped
            if iteration >= max_iterations:
                result.status = TurnStatus.BUDGET
                result.error = (
                    f"Stopped: the iteration budget ({max_iterations} model calls) is spent. "
                    "Send a message to let the agent continue."
                )
                self.sink(ev.Notice(result.error, "warning"))
                return
            self._deliver_steers()
            iteration += 1
            # S8: what the model will see is on disk before it is sent.
            self.writer.flush(self.session_id, tokens=False, when="before the model call")
            self._hook("before_model_call")
            self.compressor.maybe_compact(self)
            draft = self._call_model_fitting(iteration)
            if self._interrupted(draft, result):
                iteration -= 1  # a redirect re-runs the same iteration (T5)
                continue
            text = draft.visible_text
            if not text.strip() and not draft.calls:
                if draft.finish == "length":
                    # Cut off before any answer (often: reasoning took the whole budget).
                    # Not an empty answer: asking again would spend the same budget the
                    # same way (A6 is for a model that chose to say nothing).
                    self._cut_off_before_answer(draft, result)
                    return
                if nudged:
                    raise ProviderError(
                        ErrorKind.EMPTY,
                        "The model returned an empty answer twice: try again, or switch "
                        "model with /model.",
                    )
                nudged = True
                self._append(Message("user", EMPTY_ANSWER_NUDGE, ephemeral=True))
                continue
            calls = self._answer(draft, result)
            if not calls:
                return
            self._run_tools(calls)
            self._hook("after_tool_batch")

    def _interrupted(self, draft: Draft, result: TurnResult) -> bool:
        """After a model call: raise TurnStopped on a stop; True when a redirect re-runs it."""
        redirect = self.control.take_redirect()
        if self.control.stopped:
            self._checkpoint(draft)
            result.text = draft.visible_text
            if redirect is not None:
                # Stop wins over a concurrent redirect, but its text is never lost (T5/T6).
                self.inbox.steer(redirect)
            raise TurnStopped
        if redirect is None:
            return False
        self._checkpoint(draft)
        self._append(Message("user", redirect), persist=True)
        self.sink(ev.DisplayRow("redirect", {"text": redirect}))
        return True

    def _answer(self, draft: Draft, result: TurnResult) -> list[ToolCall]:
        """Keep the model's answer; returns its tool calls to run (none: the turn ends)."""
        text = draft.visible_text
        truncated = draft.finish == "length"
        calls = [] if truncated else draft.tool_calls(self._ids)
        message = Message("assistant", text, tool_calls=calls, thinking=draft.thinking)
        self._append(message, persist=True)
        self.sink(ev.AssistantMessage(text, tuple(c.to_dict() for c in calls)))
        result.text = text
        if truncated:
            result.status = TurnStatus.TRUNCATED
            result.error = "The answer was cut off at the model's output limit."
            self.sink(ev.Notice(result.error, "warning"))
        return calls

    def _cut_off_before_answer(self, draft: Draft, result: TurnResult) -> None:
        """End the turn on an output limit reached before any text or tool call."""
        name = self.provider_name
        provider = self.config.provider(name)
        limit = f" (now {provider.max_tokens})" if provider.max_tokens else ""
        fix = f"raise `providers.{name}.max_tokens`{limit}"
        if provider.thinking_budget:
            fix += f" or lower `providers.{name}.thinking_budget` ({provider.thinking_budget})"
        if draft.reasoned:
            what = "The model used its whole output budget thinking and wrote no answer"
        else:
            what = "The answer was cut off at the model's output limit before it began"
        result.status = TurnStatus.TRUNCATED
        result.error = f"{what}: {fix}, then ask again."
        self.sink(ev.Notice(result.error, "warning"))

    def _deliver_steers(self) -> None:
        """Deliver accepted steers as user-authored guidance at a safe boundary (T2)."""
        for text in self.inbox.take():
            self._append(Message("user", text), persist=True)
            self.sink(ev.DisplayRow("steer", {"text": text}))

    def _checkpoint(self, draft: Draft) -> None:
        """Keep the visible partial answer after a stop or redirect: never reasoning (R2)."""
        text = draft.visible_text
        if text.strip():
            self._append(Message("assistant", text), persist=True)
            self.sink(ev.AssistantMessage(text, ()))

    def _run_tools(self, calls: list[ToolCall]) -> None:
        from agent.tools.registry import ToolContext

        entered = self.control.enter_tools()
        try:
            # Read again per batch: the keys the environment holds now are the ones to withhold.
            self.secrets = self._read_secrets()
            context = ToolContext(
                workspace=self.workspace,
                approval_mode=self.config.agent.approval,
                shell_timeout=self.config.agent.shell_timeout_seconds,
                cancel=self.control.tool_cancel,
                hidden_env=self.secrets.hidden_env(),
                approvals=self.approvals,
                before_change=self.checkpointer.before_change if self.checkpointer else None,
                after_change=self.checkpointer.after_change if self.checkpointer else None,
                sandbox=self.sandbox,
            )
            batch = ToolBatch(
                registry=self.registry,
                control=self.control,
                context=context,
                approve=self.approve,
                sink=self.sink,
                touch=self.activity.touch,
                redact=self.secrets.redact,
                keep=lambda message: self._append(message, persist=True),
            )
            batch.run(calls, stopped=not entered)
            # A subdirectory's instruction file joins the first time a tool touches it (P1).
            self.context.touched(calls)
        finally:
            self.control.leave_tools()

    # -- model calls ------------------------------------------------------------------------
    def provider(self) -> Provider:
        """The adapter of the current model's provider, built once per provider."""
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

    def request(self) -> ChatRequest:
        """The next model call as it would be sent now."""
        provider_config = self.config.provider(self.provider_name)
        return ChatRequest(
            model=self.model_name,
            messages=self.messages,
            system=self.context.system(
                self.config.agent.system_prompt or system_prompt(self.workspace)
            ),
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
        provider = self.config.provider(self.provider_name)
        if exc.context_limit and not provider.context_window:
            source = "the server's context overflow error"
            SERVERS.learn_window(provider, self.model_name, exc.context_limit, source)
        if self._overflow_compacted or self.compressor.blocked_reason() == "attempts":
            return False  # C4: max_attempts holds here too
        self._overflow_compacted = True
        self.compressor.turn_attempts += 1
        size = f" ({exc.context_limit:,} tokens)" if exc.context_limit else ""
        self.sink(
            ev.Notice(
                f"The conversation no longer fits {self.provider_name}'s context{size}: "
                "compacting it and retrying once.",
                "warning",
            )
        )
        return self.compressor.compact(self, reason="overflow").ok

    def _call_model(self, iteration: int) -> Draft:
        return call_model(
            self.provider(),
            self.request,
            self.control,
            self.config.agent,
            started=ev.RequestStarted(iteration, self.model_name, self.provider_name),
            sink=self.sink,
            touch=self.activity.touch,
            on_usage=self._turn_usage,
            estimate=self._estimate_usage,
        )

    def _ask_server(self) -> None:
        """Before the first request with a model: ask its server (window, models), warn once
        when it does not list the model, and take the id a single-model server serves (6)."""
        ref = self.model_ref
        if ref in self._asked:
            return
        provider = self.config.providers.get(self.provider_name)
        if provider is None:
            return
        facts = ask_server(provider, self.model_name)
        if facts is not None and not facts.reachable:
            return  # asked again next turn: the server may be starting
        self._asked.add(ref)
        found = check_model(provider, self.model_name, facts)
        if found.warning:
            log.warning("%s", found.warning)
            self.sink(ev.Notice(found.warning, "warning"))
        if found.served:
            self.set_model(f"{self.provider_name}:{found.served}")
            self._ask_server()  # the served id has facts of its own (its window)

    def _save_cooldown(self) -> None:
        """Keep compaction's cooldown with the session, so the next run honours it (C3)."""
        state = self.compressor.cooldown_state()
        if state is None:
            self.session_metadata.pop(COOLDOWN_KEY, None)
        else:
            self.session_metadata[COOLDOWN_KEY] = state
        self.writer.update_session(self.session_id, metadata=dict(self.session_metadata))

    def _save_context(self) -> None:
        """Keep the last call's context size with the session: a resumed session's context
        bar starts from it, not from 0 % (item 8)."""
        tokens = self.usage.context_tokens
        if self.session_id is None or not tokens:
            return
        if self.session_metadata.get(CONTEXT_KEY) == tokens:
            return
        self.session_metadata[CONTEXT_KEY] = tokens
        self.writer.update_session(self.session_id, metadata=dict(self.session_metadata))

    def _turn_usage(self, usage: UsagePart) -> None:
        """A turn call's usage: accounted, and (when the server counted it) a gauge sample."""
        if not usage.estimated:
            # The messages are those of the request still streaming: the estimate is its own.
            kind = self.config.provider(self.provider_name).kind
            reported = prompt_tokens(usage, input_includes_cache=kind != "anthropic")
            self.compressor.gauge.observe(reported, estimate_request(self.request()))
        self.record_usage(usage)

    def _estimate_usage(self, draft: Draft) -> UsagePart:
        """A call the server sent no usage for: its prompt as the provider would count it (the
        last report, scaled) and the output it streamed, marked estimated."""
        prompt = self.compressor.gauge.project(estimate_request(self.request()))
        return estimated_usage(prompt, draft.streamed_chars)

    def record_usage(self, usage: UsagePart, purpose: CallPurpose = CallPurpose.TURN) -> None:
        """Account one model call of the session, whatever it was for (S2)."""
        name = self.provider_name
        self.usage_recorder.record(
            usage,
            provider_name=name,
            provider=self.config.provider(name),
            model=self.model_name,
            session_id=self.session_id,
            writer=self.writer,
            sink=self.sink,
            purpose=purpose,
            context_window=self.context_window,
        )

    # -- compaction -----------------------------------------------------------------------
    def compact(self, focus: str | None = None) -> CompactionResult:
        """`/compact [focus]`: compact now; blocking, for when no turn runs (C1)."""
        if not self._turn_lock.acquire(blocking=False):
            return CompactionResult(
                False, "busy", "A turn is running: /compact works when the agent is idle."
            )
        try:
            if self.session_id is None or not self.messages:
                return CompactionResult(False, "nothing", "Nothing to compact yet.")
            self.control.begin_compaction()
            with log_session(self.session_id):
                self._ask_server()  # the summary's budget needs the server's window too
                result = self.compressor.compact(self, focus=focus, reason="manual")
            if result.ok and result.tokens_after:
                self.usage.context_tokens = result.tokens_after  # what a resume shows
                self._save_context()
            return result
        finally:
            self.control.end()
            self._turn_lock.release()

    def replace_messages(self, messages: list[Message]) -> None:
        """Make `messages` the conversation (a compaction committed)."""
        self.messages = messages

    def touch(self) -> None:
        """Record progress on the activity clock (L1)."""
        self.activity.touch()

    # -- persistence ----------------------------------------------------------------------
    def _append(self, message: Message, *, persist: bool = False) -> None:
        self.messages.append(message)
        if (persist or message.is_display) and not message.ephemeral:
            self.writer.persist(self.session_id, message)

    def check_saving(self, reason: str | None = None) -> None:
        """Tell the user, once, that the session's writes fail (`reason`: one the store just
        reported, outside a turn) or wait for a lock (S7, H7): the one teller of both."""
        self.writer.check(reason)

    def close(self) -> None:
        """Release provider clients; finish the checkpoints being taken."""
        for provider in self._providers.values():
            provider.close()
        self._providers.clear()
        if self.checkpointer is not None:
            self.checkpointer.close()
