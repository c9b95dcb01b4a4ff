"""The Agent: one session's conversation, its parts, and run_turn / steer / redirect / stop.

The Agent holds what lives across turns and the controls other threads use; each turn is a
`Turn` (agent/turn.py: the tool loop around the model and its one terminal path). The rest
lives in modules of one idea: the session it is in (agent/session_state.py), the control
state (agent/control.py), one model call with its retries (agent/model_call.py), usage
(agent/usage.py), the session's writes (agent/session_writer.py, the store's one door), how
turns end (agent/turn_endings.py) and asking a server what it serves (agent/server_check.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent import recovery
from agent.compaction import CompactionResult, ContextCompressor
from agent.config import Config, split_model_ref
from agent.confinement import decide_sandbox, make_checkpointer
from agent.control import TurnControl
from agent.hooks.engine import workspace_rules
from agent.inbox import Inbox
from agent.kinds import ApprovalMode, CallPurpose, ErrorKind, Phase
from agent.liveness import ActivityClock, CodeSkewGuard
from agent.log_context import log_session
from agent.messages import Message
from agent.models import context_window_for
from agent.modes import MODE_KEY
from agent.ports import ApprovalPolicy, SessionStore
from agent.probes import AgentProbes
from agent.project_context import ProjectContext
from agent.providers.base import ChatRequest, Provider, UsagePart
from agent.providers.errors import register_secret
from agent.providers.factory import ProviderCache
from agent.requests import next_request
from agent.secrets import Secrets
from agent.server_check import ServerAsker
from agent.session_state import COOLDOWN_KEY, SessionState, StoredRow, title_of
from agent.session_writer import SessionWriter
from agent.subagents import child_of, record_child_usage, with_task
from agent.turn import Turn
from agent.turn_endings import TurnResult, refusal, unknown_model
from agent.usage import CONTEXT_KEY, Usage, UsageRecorder

if TYPE_CHECKING:
    from agent.tools.registry import ToolRegistry
    from storage.rows import SessionRow

log = logging.getLogger("hermes_tui.agent")

__all__ = ["COOLDOWN_KEY", "Agent", "TurnResult"]


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
        self.permissions, self.hooks = workspace_rules(config, self.workspace)  # N3, N4
        self.approval_mode = ApprovalMode(config.agent.approval)  # then modes.switch_mode (N1)
        # A top-level agent has the `task` tool; a child's registry leaves it out (G1).
        self.registry = registry or with_task(default_registry(), self)
        self.parent: Agent | None = None  # the agent whose `task` call runs this one
        self.system_prompt: str | None = None  # a subagent type's; None: the configured one
        self.sandbox = decide_sandbox(config, self.registry)
        self.inbox = Inbox()
        self.state = SessionState()
        self.model_ref = config.model
        self.writer = SessionWriter(store, lambda event: self.sink(event))
        self.usage_recorder = UsageRecorder(config.budget)
        self.probes = AgentProbes()
        self.extra_body: dict[str, Any] = {}
        """Fields every request's body carries besides the routing key (a test's stop words)."""
        self.control = TurnControl()
        self.activity = ActivityClock(self._stamp_heartbeat)
        self.compressor = ContextCompressor(config.compression, on_change=self._save_cooldown)
        self.skew_guard = CodeSkewGuard()
        self.secrets = self.read_secrets()
        self.context = ProjectContext(  # instruction files and @ mentions (P1, P2)
            self.workspace, config.home, lambda event: self.sink(event), self.append
        )
        self._providers = ProviderCache(config.agent.stream_idle_timeout_seconds)
        self._turn_lock = threading.Lock()
        self._server = ServerAsker()
        self.checkpointer = make_checkpointer(
            config, self.workspace, self.store, lambda event: self.sink(event)
        )
        self.owns_checkpoints = True  # False: a subagent's changes join its parent's turn's

    def child(self, registry: ToolRegistry | None = None, model: str | None = None) -> Agent:
        """A second agent in this one's world (config, store, sink, workspace, approvals
        dialog and answers, sandbox, checkpoints), with a session and context of its own: a
        subagent. `registry` narrows its tools (default: the same ones but `task`, so a
        subagent starts no subagents), `model` (provider:model) its model."""
        return child_of(self, registry, model)

    def read_secrets(self) -> Secrets:
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

    # -- session ----------------------------------------------------------------------------
    @property
    def session_id(self) -> str | None:
        """The session's id; None until the first turn creates it."""
        return self.state.session_id

    @property
    def messages(self) -> list[Message]:
        """The conversation as the model will see it next (display rows included)."""
        return self.state.messages

    @messages.setter
    def messages(self, messages: list[Message]) -> None:
        self.state.messages = messages

    def _enter(self, state: SessionState, session: StoredRow | None) -> None:
        """The one reset: everything that belongs to a session starts from `state`."""
        self.state = state
        self.usage_recorder.start(Usage.of_session(session, self.config.providers))
        self.compressor.gauge.reset()
        self.approvals.clear()
        # The cooldown belongs to the session: it survives across runs (C3).
        self.compressor.restore_cooldown(state.cooldown)

    def new_session(self) -> None:
        """Forget the current session; the next turn starts a fresh one."""
        self._enter(SessionState(), None)
        self.context.new_session()

    def attach_session(
        self, session_id: str, rows: Sequence[StoredRow], session: StoredRow | None = None
    ) -> None:
        """Switch to a stored session from its persisted rows (no I/O here) (D3).

        `session`, its stored row, carries the totals the usage counts on from, and its
        metadata (compaction's cooldown).
        """
        self._enter(SessionState.of(session_id, rows, session), session)
        self.context.attach_rows(rows)

    def resume(self, ref: str) -> SessionRow:
        """Blocking resume by id or title through the store; returns the session row."""
        if self.store is None:
            raise ValueError("resuming needs a session store")
        session = self.writer.find_session(ref)
        if session is None:
            raise LookupError(f"No session matches {ref!r}: see `hermes-tui sessions list`.")
        self.attach_session(session["id"], self.writer.load_messages(session["id"]), session)
        if session.get("model") and session.get("provider") in self.config.providers:
            self.model_ref = f"{session['provider']}:{session['model']}"
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
        self.permissions, self.hooks = workspace_rules(self.config, self.workspace)  # its own
        if self.checkpointer is not None and self.owns_checkpoints:  # a workspace's (X2)
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
        self.append(Message("assistant", display_kind=kind, display_metadata=metadata))
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
        refused = self._refusal(text if shown is None else shown, model, raw=text)
        if refused is not None:
            return refused
        with self._turn_lock, self._turn_model(model):
            return Turn(self).run(text, shown, note_kind, expected=expected)

    def _refusal(self, typed: str, model: str | None, *, raw: str) -> TurnResult | None:
        """A turn that cannot start, said before anything is written (the text goes back)."""
        refused = refusal(self.skew_guard, self.missing_key(), unknown_model(self.config, model))
        if refused is not None:
            refused.unsent = raw if refused.error_kind == ErrorKind.UPGRADED else typed
            self.sink(ev.TurnError(refused.error or "", refused.error_kind or ErrorKind.OTHER))
        return refused

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

    def _stamp_heartbeat(self, wall_time: float) -> None:
        """Write the session's heartbeat (throttled by the activity clock) (L1)."""
        self.writer.update_session(self.session_id, last_activity_at=wall_time)

    def ensure_session(self, first_text: str) -> None:
        """Create the session's row before its first turn (titled by `first_text`)."""
        if self.session_id is not None:
            return
        if self.store is None:
            self.state.session_id = uuid.uuid4().hex[:12]
            return
        row = self.writer.create_session(
            model=self.model_name,
            provider=self.provider_name,
            workspace=str(self.workspace),
            title=title_of(first_text),
            metadata=self.state.keep(MODE_KEY, str(self.approval_mode)),
            parent_session_id=None if self.parent is None else self.parent.session_id,
        )
        self.state.session_id = row["id"]

    # -- model calls ------------------------------------------------------------------------
    def provider(self) -> Provider:
        """The adapter of the current model's provider, built once per provider."""
        return self._providers.get(self.config.provider(self.provider_name))

    def request(self) -> ChatRequest:
        """The next model call as it would be sent now."""
        return next_request(
            self.config,
            self.model_ref,
            self.messages,
            session_id=self.session_id,
            context=self.context,
            registry=self.registry,
            workspace=self.workspace,
            extra_body=self.extra_body,
            mode=self.approval_mode,
            system=self.system_prompt,
        )

    def ask_server(self) -> None:
        """Before the first request with a model: ask its server (window, models), warn once
        when it does not list the model, and take the id a single-model server serves (6)."""
        provider = self.config.providers.get(self.provider_name)
        found = self._server.ask(provider, self.model_ref, self.model_name)
        if found is None:
            return
        if found.warning:
            log.warning("%s", found.warning)
            self.sink(ev.Notice(found.warning, "warning"))
        if found.served:
            self.set_model(f"{self.provider_name}:{found.served}")
            self.ask_server()  # the served id has facts of its own (its window)

    def _save_cooldown(self) -> None:
        """Keep compaction's cooldown with the session, so the next run honours it (C3)."""
        self.keep_metadata(COOLDOWN_KEY, self.compressor.cooldown_state())

    def save_context(self) -> None:
        """Keep the last call's context size with the session: a resumed session's context
        bar starts from it, not from 0 % (item 8)."""
        tokens = self.usage.context_tokens
        if (
            self.session_id is not None
            and tokens
            and self.state.metadata.get(CONTEXT_KEY) != tokens
        ):
            self.keep_metadata(CONTEXT_KEY, tokens)

    def keep_metadata(self, key: str, value: Any) -> None:
        """Set (None: drop) one key of the session's metadata, and queue the row's update."""
        self.writer.update_session(self.session_id, metadata=self.state.keep(key, value))

    def record_usage(self, usage: UsagePart, purpose: CallPurpose = CallPurpose.TURN) -> None:
        """Account one model call of the session, whatever it was for (S2)."""
        if self.parent is not None:  # a subagent's calls are its parent session's (G1)
            return record_child_usage(self, self.parent, usage)
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
                self.ask_server()  # the summary's budget needs the server's window too
                result = self.compressor.compact(self, focus=focus, reason="manual")
            if result.ok and result.tokens_after:
                self.usage.context_tokens = result.tokens_after  # what a resume shows
                self.save_context()
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
    def append(self, message: Message, *, persist: bool = False) -> None:
        """Add `message` to the conversation; queue its row when `persist` (display rows
        always, ephemeral ones never)."""
        self.messages.append(message)
        if (persist or message.is_display) and not message.ephemeral:
            self.writer.persist(self.session_id, message)

    def check_saving(self, reason: str | None = None) -> None:
        """Tell the user, once, that the session's writes fail (`reason`: one the store just
        reported, outside a turn) or wait for a lock (S7, H7): the one teller of both."""
        self.writer.check(reason)

    def close(self) -> None:
        """Release provider clients; finish the checkpoints being taken."""
        self._providers.close()
        if self.checkpointer is not None and self.owns_checkpoints:
            self.checkpointer.close()
