"""What the agent changed, from the app's side: /undo, /rewind, /diff and /fork (X1, X2).

The git work runs on a thread (asyncio.to_thread), never on the UI thread; the database is
awaited on the app's loop, which owns it. Every restore leaves a ◈ row in the transcript.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hermes_tui.doors import Notices, RunsWorkers, agent_of, started, store_of
from hermes_tui.screens.rewind import ConflictScreen, RewindChoice, RewindScreen, points_of

if TYPE_CHECKING:
    from textual.screen import Screen

    from agent.checkpoints.checkpointer import Checkpointer
    from agent.checkpoints.restore import RestorePlan, RestoreResult
    from agent.checkpoints.session import Rewind, Step
    from agent.loop import Agent
    from hermes_tui.sessions import SessionsController
    from hermes_tui.turns import TurnController
    from hermes_tui.widgets.composer import Composer
    from hermes_tui.widgets.transcript import Transcript
    from storage.checkpoints import CheckpointRow
    from storage.db import SessionDB

R = TypeVar("R")

NO_CHECKPOINTS = (
    "Checkpoints are off (no git binary was found, or `checkpoints.enabled` is false): "
    "there is nothing to restore."
)
NO_SESSION = "Nothing to rewind yet: send a message first."
TURN_TEXT_CHARS = 200
"""How much of the undone turn's message its ◈ row keeps."""


@dataclass(frozen=True)
class Undone:
    """A turn /undo took back, for /redo: its checkpoint row and the restore that undid it."""

    session_id: str
    turn: Mapping[str, Any]
    undo_key: str


class ChangesHost(Notices, RunsWorkers, Protocol):
    """What /undo, /rewind, /diff and /fork use of the app: the agent and the store (after
    the start), the turns (none may run), the sessions, the transcript and the composer."""

    agent: Agent | None
    db: SessionDB | None
    turns: TurnController
    sessions: SessionsController

    @property
    def busy(self) -> bool:
        """True while agent work runs or a sent line waits to run."""
        ...

    @property
    def composer(self) -> Composer:
        """The composer widget."""
        ...

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    async def push_screen_wait(self, screen: Screen[R]) -> R:
        """Show `screen` and wait for what it is dismissed with."""
        ...


class ChangesController:
    """Restores code and conversation to a checkpoint, and shows the session's changes."""

    def __init__(self, app: ChangesHost) -> None:
        self.app = app
        self._last_escape: float | None = None
        # The redo stack lives in memory, as in an editor: it is not stored, so it ends
        # with the app. `_own` are the restore rows /undo and /redo recorded, which keep it.
        self._redo: list[Undone] = []
        self._own: set[str] = set()
        self.worker: Any = None
        """The running /undo, /rewind, /diff or /fork (tests wait for it)."""

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run one of the coroutines below as a worker: they may wait on a dialog."""
        self.worker = self.app.run_worker(
            self._reported(work), group="changes", exclusive=True, exit_on_error=False
        )

    async def _reported(self, work: Coroutine[Any, Any, None]) -> None:
        from storage.errors import StorageError, sentence

        try:
            await work
        except StorageError as exc:
            await self.app.notice(sentence(exc), "error")

    async def wait(self) -> None:
        """Wait until the running change command is done."""
        if self.worker is not None:
            await self.worker.wait()

    @property
    def _agent(self) -> Agent:
        return agent_of(self.app)

    @property
    def _db(self) -> SessionDB:
        return store_of(self.app)

    @property
    def _session_id(self) -> str:
        """The live session's id (each command here first checks there is one)."""
        return started(self._agent.session_id, "session")

    @property
    def _checkpointer(self) -> Checkpointer | None:
        return self._agent.checkpointer

    async def _rows(self) -> list[CheckpointRow]:
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.idle)
        return await self._db.list_checkpoints(self._session_id)

    async def _usable(self, what: str) -> bool:
        app = self.app
        if await app.turns.refused(what):
            return False
        if self._agent.session_id is None:
            await app.notice(NO_SESSION)
            return False
        return True

    # -- /undo and /redo -----------------------------------------------------------------------
    async def undo(self) -> None:
        """Take back the newest turn that changed files and is not undone yet (outside
        edits kept unless confirmed); each /undo steps one turn further back."""
        from agent.checkpoints import session
        from agent.checkpoints.shadow import ShadowError

        if not await self._usable("undo"):
            return
        if self._checkpointer is None:
            await self.app.notice(NO_CHECKPOINTS, "warning")
            return
        rows = await self._rows()
        try:
            step = await asyncio.to_thread(session.undo_step, self._checkpointer, rows)
        except ShadowError as exc:
            await self.app.notice(str(exc), "error")
            return
        if step is None:
            done = session.any_undone(rows)
            await self.app.notice(session.NOTHING_LEFT_TO_UNDO if done else session.NOTHING_TO_UNDO)
            return
        result = await self._apply(step.rewind, step.plan)
        if result.restored:
            self._redo = [*self._redo_stack(), Undone(self._session_id, step.turn, result.key)]
            self._own.add(result.key)
        self._agent.add_display_row("undo", self._step_metadata(step, result))

    async def redo(self) -> None:
        """Put back what the last /undo took back, unless files changed since (X2)."""
        from agent.checkpoints import session
        from agent.checkpoints.shadow import ShadowError

        if not await self._usable("redo"):
            return
        if self._checkpointer is None:
            await self.app.notice(NO_CHECKPOINTS, "warning")
            return
        stack = self._redo_stack()
        if not stack:
            await self.app.notice(session.NOTHING_TO_REDO)
            return
        undone = stack[-1]
        rows = await self._rows()
        try:
            step = await asyncio.to_thread(
                session.redo_step, self._checkpointer, rows, undone.turn, undone.undo_key,
                self._own,
            )  # fmt: skip
        except ShadowError as exc:
            await self.app.notice(str(exc), "error")
            return
        if step is None:
            self._redo = []
            await self.app.notice(session.REDO_DROPPED)
            return
        self._redo = stack[:-1]
        result = await self._apply(step.rewind, step.plan)
        self._own.add(result.key)
        self._db.enqueue_checkpoint_update(undone.session_id, undone.turn["key"], undone=False)
        self._agent.add_display_row("redo", self._step_metadata(step, result))

    def _redo_stack(self) -> list[Undone]:
        """The undos /redo can bring back, newest last: none of another session's."""
        live = self._agent.session_id
        return [entry for entry in self._redo if entry.session_id == live]

    def _step_metadata(self, step: Step, result: RestoreResult) -> dict[str, Any]:
        """An /undo's or /redo's ◈ row: which turn, and what it did to the files."""
        message_id = step.turn.get("message_id")
        text = next(
            (
                str((m.display_metadata or {}).get("shown") or m.content or "")
                for m in self._agent.messages
                if message_id is not None and m.db_id == message_id
            ),
            "",
        )
        return {**_code_metadata(result), "message": text[:TURN_TEXT_CHARS]}

    async def _restore(self, rewind: Rewind) -> RestoreResult | None:
        """Plan, ask about outside edits, apply; None when there was nothing to do."""
        from agent.checkpoints import session
        from agent.checkpoints.shadow import ShadowError

        try:
            checkpointer = started(self._checkpointer, "checkpoints")
            plan = await asyncio.to_thread(session.plan, checkpointer, rewind)
        except ShadowError as exc:
            await self.app.notice(str(exc), "error")
            return None
        if plan.empty:
            await self.app.notice("The files are already as they were then: nothing to restore.")
            return None
        return await self._apply(rewind, plan)

    async def _apply(self, rewind: Rewind, plan: RestorePlan) -> RestoreResult:
        """Ask about outside edits (kept unless confirmed, X2), then write the plan back."""
        from agent.checkpoints import session

        checkpointer = started(self._checkpointer, "checkpoints")
        db, session_id = self._db, self._session_id
        overwrite = False
        if plan.conflicts:
            screen = ConflictScreen([c.path for c in plan.conflicts])
            answer = await self.app.push_screen_wait(screen)
            overwrite = bool(answer)  # None too when it closes without an answer
        return await asyncio.to_thread(
            session.apply,
            checkpointer,
            rewind,
            plan,
            overwrite=overwrite,
            record=lambda row: db.enqueue_checkpoint(session_id, row),
            mark_undone=lambda key: db.enqueue_checkpoint_update(session_id, key, undone=True),
        )

    # -- /rewind -------------------------------------------------------------------------------
    async def open_picker(self) -> None:
        """The rewind picker; its choice is carried out when it closes."""
        if not await self._usable("rewind"):
            return
        # Checkpoints first: that waits for the last turn's closing snapshot and writes what
        # is queued, so the messages read next are all there, each with its checkpoint.
        checkpoints = await self._rows()
        rows = await self._db.load_messages(self._session_id)
        points = points_of(rows, checkpoints)
        if not points:
            await self.app.notice(NO_SESSION)
            return
        choice = await self.app.push_screen_wait(RewindScreen(points))
        if choice is not None:
            await self.rewind(choice)

    async def rewind(self, choice: RewindChoice) -> None:
        """Carry out a picked rewind: code, conversation, both, or a fork."""
        from agent.checkpoints import session

        app, point = self.app, choice.point
        # A rewind is a change of its own: what /undo took back can no longer be redone.
        self._redo = []
        if choice.action == "fork":
            await self.fork(point.seq - 1, text=point.text)
            return
        meta: dict[str, Any] = {"message": point.text[:200]}
        if choice.action in ("both", "code"):
            if self._checkpointer is None:
                await app.notice(NO_CHECKPOINTS, "warning")
            else:
                rewind = session.rewind_to_message(await self._rows(), point.message_id)
                result = None if rewind is None else await self._restore(rewind)
                meta["code"] = _code_metadata(result) if result else {"restored": []}
        if choice.action in ("both", "conversation"):
            meta["branch"] = await self._rewind_conversation(point.seq)
            app.composer.text = point.text
        self._agent.add_display_row("rewind", meta)

    async def _rewind_conversation(self, seq: int) -> str:
        """The session goes on from before `seq`; later rows move to a branch session."""
        session_id = self._session_id
        branch = await self._db.branch_session(session_id, seq, kind="rewind", move_later=True)
        await self._reattach(session_id)
        return branch["id"]

    async def _reattach(self, session_id: str) -> None:
        app = self.app
        session = await self._db.get_session(session_id)
        rows = await self._db.load_messages(session_id)
        self._agent.attach_session(session_id, rows, session)
        await app.transcript.clear()
        await app.transcript.open_history()
        await app.sessions.refresh()

    # -- /fork ---------------------------------------------------------------------------------
    async def fork(self, seq: int | None = None, *, text: str = "") -> None:
        """A new session with this one's history up to `seq` (all of it by default)."""
        app = self.app
        if not await self._usable("fork"):
            return
        parent_id = self._session_id
        parent = await self._db.get_session(parent_id)
        if seq is None:
            seq = await self._db.last_message_seq(parent_id) or 0
        # The same title: the sessions panel marks it as a fork of its parent.
        fork = await self._db.branch_session(parent_id, seq, kind="fork")
        await self._reattach(fork["id"])
        title = parent.get("title") if parent else None
        self._agent.add_display_row("fork", {"from": title or parent_id})
        if text:
            app.composer.text = text

    # -- /diff ---------------------------------------------------------------------------------
    async def show_diff(self) -> None:
        """Every file the session changed so far, against its first checkpoint."""
        from agent.checkpoints import session
        from agent.checkpoints.shadow import ShadowError
        from hermes_tui.widgets.diff_view import ChangeReport

        if not await self._usable("see the session's changes"):
            return
        if self._checkpointer is None:
            await self.app.notice(NO_CHECKPOINTS, "warning")
            return
        rows = await self._rows()
        try:
            diffs = await asyncio.to_thread(session.session_diff, self._checkpointer, rows)
        except ShadowError as exc:
            await self.app.notice(str(exc), "error")
            return
        if not diffs:
            await self.app.notice("No file differs from the session's first checkpoint.")
            return
        files = [(d.path, d.text, d.added, d.removed) for d in diffs]
        await self.app.transcript.add(ChangeReport(files))
        self.app.transcript.anchor()

    # -- Esc Esc -------------------------------------------------------------------------------
    def escape_pressed(self, at: float) -> bool:
        """A second Esc soon after a first, with no turn running and nothing typed, opens
        the rewind picker (True); a lone Esc only arms it."""
        app = self.app
        if app.busy or app.composer.text.strip():
            self._last_escape = None
            return False
        last = self._last_escape
        if last is not None and at - last <= DOUBLE_ESCAPE_SECONDS:
            self._last_escape = None
            self.start(self.open_picker())
            return True
        self._last_escape = at
        return False


DOUBLE_ESCAPE_SECONDS = 0.6
"""Two Esc presses this close together on an idle, empty composer open the rewind picker."""


def _code_metadata(result: RestoreResult) -> dict[str, Any]:
    """What a restore did, for its ◈ row."""
    return {
        "restored": result.restored[:50],
        "restored_count": len(result.restored),
        "kept": result.kept[:50],
        "failed": [path for path, _reason in result.failed[:50]],
    }
