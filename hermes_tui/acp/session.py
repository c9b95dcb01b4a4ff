"""One ACP session: its Runtime (store, agent, MCP servers) in the client's folder, its
turns one after another, and the way its events and approvals reach the client (E1).

A prompt sent while a turn runs follows `agent.busy_input_mode` as Enter does in the TUI
(T1): queued behind the turn, steered into it, or redirecting it; a steer the turn did not
take is queued behind older input, once (T3). Its response comes when the turn that read
its text ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError, text_block, tool_content
from acp.schema import ToolCallUpdate

from agent import events as ev
from agent.config import Config
from agent.kinds import BusyInputMode, TurnStatus
from agent.tools.approvals import Verdict
from agent.tools.registry import ApprovalRequest
from hermes_tui.acp.outbox import POLL, Outbox
from hermes_tui.acp.permissions import options_for, verdict_of
from hermes_tui.acp.updates import tool_kind, updates_for
from hermes_tui.runtime import Runtime

log = logging.getLogger("hermes_tui.acp")

STOP_REASONS = {
    TurnStatus.OK: "end_turn",
    TurnStatus.STOPPED: "cancelled",
    TurnStatus.BUDGET: "max_turn_requests",
    TurnStatus.TRUNCATED: "max_tokens",
}
"""How a turn ended (agent/kinds.py) as ACP's stop reason; an error is a JSON-RPC error."""


@dataclass
class _Item:
    """Text waiting for a turn, and the prompt requests that its turn answers."""

    text: str
    answers: list[asyncio.Future[str]] = field(default_factory=list)


class AcpSession:
    """A client's session: one agent, one store connection, its turns and its outbox."""

    def __init__(self, conn: Any, workspace: Path) -> None:
        self.conn = conn
        self.workspace = workspace
        self.loop = asyncio.get_running_loop()
        self.outbox = Outbox(self.loop)
        self.runtime: Runtime | None = None
        self.id: str | None = None
        self._pump = self.loop.create_task(self.outbox.pump(), name="acp-outbox")
        self._queue: deque[_Item] = deque()
        self._running: _Item | None = None
        self._runner: asyncio.Task[None] | None = None
        self._asking_call = ""
        self._asks: set[asyncio.Task[None]] = set()
        self._cancelled = False
        self.mode = ""

    @property
    def agent(self) -> Any:
        """The session's Agent (started)."""
        assert self.runtime is not None
        return self.runtime.agent

    async def start(self, config: Config, *, resume: str | None = None) -> None:
        """Start the runtime in the workspace; a new stored session, or `resume`'s."""
        self.runtime = await Runtime.start(
            config, self.sink, self.approve, workspace=self.workspace
        )
        if resume is not None:
            await asyncio.to_thread(self.agent.resume, resume)
        else:
            # Created now, not at the first turn as in the TUI: the client holds this id from
            # session/new on, and session/load and `hermes-tui sessions list` know it.
            await asyncio.to_thread(self.agent.ensure_session, "")
        self.id = self.agent.session_id
        self.mode = str(self.agent.approval_mode)

    # -- from the agent's worker thread ---------------------------------------------------
    def sink(self, event: ev.AgentEvent) -> None:
        """The agent's sink: each event as the session updates that show it, in order."""
        if isinstance(event, ev.ToolAwaitingApproval):
            self._asking_call = event.call_id  # the approval callback follows on this thread
        if self.id is None:
            return
        for update in updates_for(event, self.workspace):
            self.outbox.put(functools.partial(self.conn.session_update, self.id, update))

    def approve(self, request: ApprovalRequest) -> Verdict:
        """The agent's approval callback: asks the client, blocks the worker for its answer.

        No answer (the client cannot ask, has gone, or the turn was cancelled) is a no.
        """
        answer: concurrent.futures.Future[Verdict] = concurrent.futures.Future()
        call = ToolCallUpdate(
            tool_call_id=self._asking_call,
            title=request.summary,
            kind=tool_kind(request.tool),
            status="pending",
            # What the TUI's dialog shows under the summary: the command, the diff, a note.
            content=[tool_content(text_block(shown))] if (shown := _asked(request)) else None,
        )

        async def ask() -> None:
            task = self.loop.create_task(self._ask(call, request, answer))
            self._asks.add(task)
            task.add_done_callback(self._asks.discard)

        if not self.outbox.put(ask):
            return Verdict(False)
        while True:
            try:
                return answer.result(timeout=POLL)
            except concurrent.futures.TimeoutError:
                if self.outbox.closed.is_set() or self._cancelled:
                    return Verdict(False)

    async def _ask(
        self,
        call: ToolCallUpdate,
        request: ApprovalRequest,
        answer: concurrent.futures.Future[Verdict],
    ) -> None:
        verdict = Verdict(False)
        try:
            response = await self.conn.request_permission(
                session_id=self.id, tool_call=call, options=options_for(request)
            )
            verdict = verdict_of(response, request)
        except (Exception, asyncio.CancelledError):
            pass  # a client that cannot ask, or a cancelled turn: no
        finally:
            if not answer.done():
                answer.set_result(verdict)

    # -- from the client --------------------------------------------------------------------
    async def prompt(self, text: str) -> str:
        """Run `text` (now, behind the running turn, or into it); the stop reason of the turn
        that read it."""
        answer: asyncio.Future[str] = self.loop.create_future()
        running = self._running
        if running is not None and self._into_running(text):
            running.answers.append(answer)
        else:
            self._queue.append(_Item(text, [answer]))
            if running is not None:
                # Said in the log, so a reader of it (and a test) can tell a queued prompt
                # from one that came after the turn.
                log.info("prompt queued behind the running turn (%d waiting)", len(self._queue))
            if self._runner is None or self._runner.done():
                self._runner = self.loop.create_task(self._run_queue(), name="acp-turns")
        return await answer

    def _into_running(self, text: str) -> bool:
        """Steer or redirect the running turn with `text`, as busy_input_mode says (T1).

        On the loop, not a thread: the turn cannot end between taking the text and its
        prompt joining the turn's answers (both calls only take the agent's short lock).
        """
        mode = self.agent.config.agent.busy_input_mode
        if mode == BusyInputMode.STEER:
            return bool(self.agent.steer(text))
        if mode == BusyInputMode.INTERRUPT:
            return bool(self.agent.redirect(text))
        return False

    async def _run_queue(self) -> None:
        while self._queue:
            item = self._queue.popleft()
            self._running = item
            self._cancelled = False  # a cancel from now on is this turn's
            self.agent.expect_turn()  # a cancel from now on stops this turn (Z1)
            try:
                result = await asyncio.to_thread(self._turn, item.text)
            except Exception as exc:  # a bug, said as one sentence: the next prompt still runs
                for answer in item.answers:
                    _settle(answer, exc=RequestError(-32603, f"The turn failed: {exc}"))
                continue
            finally:
                self._running = None
            await self._after_turn()
            if result.pending_steer and len(item.answers) > 1 and not self._cancelled:
                # The steers the turn never read run next, behind older input (T3).
                self._queue.append(_Item(result.pending_steer, item.answers[1:]))
                item.answers = item.answers[:1]
            for answer in item.answers:
                _settle_with(answer, result)

    def _turn(self, text: str) -> Any:
        """One turn on the worker thread; the session's title is its first text."""
        from agent.session_state import title_of

        if not any(m.role == "user" for m in self.agent.messages):
            self.agent.writer.update_session(self.id, title=title_of(text))
        return self.agent.run_turn(text)

    async def _after_turn(self) -> None:
        """A plan approved in the turn switched the mode (N1): the client is told."""
        from acp.helpers import update_current_mode

        mode = str(self.agent.approval_mode)
        if mode != self.mode:
            self.mode = mode
            self.outbox.put(
                functools.partial(self.conn.session_update, self.id, update_current_mode(mode))
            )

    def cancel(self) -> None:
        """session/cancel: the turn stops as Esc stops it (T6); the prompts queued behind it
        end cancelled now (the editor keeps their text), and one sent after the cancel runs."""
        self._cancelled = True
        self.agent.stop()
        for task in list(self._asks):
            task.cancel()
        self._cancel_queued()

    def _cancel_queued(self) -> None:
        while self._queue:
            for answer in self._queue.popleft().answers:
                _settle(answer, "cancelled")

    async def close(self) -> None:
        """Stop the turn and close the runtime (what the turn did is stored); bounded."""
        self.outbox.close()
        if self.runtime is not None:
            self.agent.stop()
            if self._runner is not None:
                await asyncio.wait({self._runner}, timeout=30)
            await self.runtime.close()
        self._pump.cancel()


def _asked(request: ApprovalRequest) -> str:
    """The detail and note of an approval, as one text (empty when it has neither)."""
    return "\n\n".join(part for part in (request.note, request.detail) if part)


def _settle_with(answer: asyncio.Future[str], result: Any) -> None:
    reason = STOP_REASONS.get(result.status)
    if reason is None:
        _settle(answer, exc=RequestError(-32603, result.error or "The turn failed."))
    else:
        _settle(answer, reason)


def _settle(
    answer: asyncio.Future[str], reason: str = "", exc: BaseException | None = None
) -> None:
    if answer.done():
        return
    if exc is not None:
        answer.set_exception(exc)
    else:
        answer.set_result(reason)
