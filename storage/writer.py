"""The queued writer: any thread appends, one task on the owning loop applies in order.

The caller's cost is a locked deque append and (at most) one call_soon_threadsafe. The writer
task, started lazily on the loop that opened the database, takes everything queued as one
batch and applies it in one BEGIN IMMEDIATE transaction, one SAVEPOINT per write, so a bad
write fails only its own Future. Flushes are barriers in the same queue, so "everything
enqueued before the flush" is exactly what sits in front of the barrier.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .accounting import TokenAccounting
from .connection import StoreConnection
from .errors import (
    StorageClosedError,
    StorageError,
    StorageIndexCorruptError,
    StorageLockedError,
)
from .lifecycle import ExitWait
from .rows import FLUSH_FIRST_FIELDS

log = logging.getLogger("hermes_tui.storage")

BARRIER = "barrier"


@dataclass(slots=True)
class Op:
    """One queued write (or a flush barrier) and the future its caller holds."""

    kind: str
    session_id: str
    payload: Any
    future: concurrent.futures.Future[Any] | asyncio.Future[Any]


def _resolve(fut: concurrent.futures.Future[Any] | asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: concurrent.futures.Future[Any] | asyncio.Future[Any], exc: BaseException) -> None:
    if fut.done():
        return
    fut.set_exception(exc)
    if isinstance(fut, asyncio.Future):
        # A flush barrier whose flusher went away must not log "exception never retrieved".
        fut.exception()


class Writer:
    """The write queue of one SessionDB and the task that drains it on the owning loop."""

    def __init__(
        self,
        conn: StoreConnection,
        loop: asyncio.AbstractEventLoop,
        apply: Callable[[Op], Awaitable[Any]],
        *,
        tokens: TokenAccounting,
        report: Callable[[StorageError], None],
        exit_wait: ExitWait,
    ) -> None:
        """`apply(op)` writes one op inside the open transaction; `tokens` is flushed before
        a route switch (S5); `report(err)` tells of a failed write; `exit_wait` hears what a
        stopping writer waits for and gives up on."""
        self._conn = conn
        self._loop = loop
        self._apply_op = apply
        self._tokens = tokens
        self._report = report
        self._exit_wait = exit_wait
        self._queue: deque[Op] = deque()
        # Guards queue mutation against iteration (requeue after a lock timeout) and the
        # closed flag against late enqueues; held for a few bytecodes only.
        self._lock = threading.Lock()
        self._wake = asyncio.Event()
        self._notify_pending = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._stopping = False
        self._finished = False
        # While stopping, a held lock is retried until this time.monotonic() value.
        self._give_up_at = 0.0
        self._inflight: list[Op] = []  # the batch being applied (for pending())
        self.lock_blocked = False  # the last batch lost to another process's lock
        # Set before the writer pops the queue, so flush()'s lock-free fast path
        # (`not queue and not busy`) never misses a batch in flight.
        self.busy = False

    @property
    def idle(self) -> bool:
        """True when nothing is queued and no batch is being applied."""
        return not self._queue and not self.busy

    def pending(self) -> Counter[str]:
        """Writes queued or being applied, by kind (flush barriers are not writes)."""
        with self._lock:
            # A batch put back after a lock timeout sits in both until the writer moves on.
            ops = {id(op): op for op in [*self._inflight, *self._queue]}.values()
        return Counter(op.kind for op in ops if op.kind != BARRIER and not op.future.done())

    def submit(self, op: Op) -> None:
        """Queue one op; callable from any thread. Raises StorageClosedError after close."""
        with self._lock:
            if self._closed:
                raise StorageClosedError(self._conn.path)
            self._queue.append(op)
        if self._notify_pending:
            return  # a wake-up is already scheduled and will see this op
        self._notify_pending = True
        try:
            self._loop.call_soon_threadsafe(self._on_notify)
        except RuntimeError:  # the owning loop is closed: nothing will ever drain this
            self._notify_pending = False
            with self._lock:
                try:
                    self._queue.remove(op)
                except ValueError:
                    pass
            raise StorageClosedError(self._conn.path) from None

    def _on_notify(self) -> None:
        self._notify_pending = False
        self._ensure_task()
        self._wake.set()

    def _ensure_task(self) -> None:
        if self._finished:
            return
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._run(), name="hermes-storage-writer")

    async def flush(self) -> None:
        """Wait until every op queued before this call has been applied (or has failed)."""
        if self.idle:
            return
        barrier: asyncio.Future[None] = self._loop.create_future()
        self.submit(Op(BARRIER, "", None, barrier))
        await barrier

    async def stop(self, give_up_at: float) -> None:
        """Refuse new ops, drain what is queued, and end the writer task.

        A write held up by another process's lock is retried until `give_up_at` (a
        time.monotonic() value), then failed and counted as unsaved.
        """
        with self._lock:
            self._closed = True
        self._give_up_at = give_up_at
        self._stopping = True
        if self._queue:
            self._ensure_task()
        self._wake.set()
        if self._task is not None:
            await self._task
        self._finished = True

    async def _run(self) -> None:
        try:
            while True:
                if not self._queue:
                    if self._stopping:
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                self.busy = True
                try:
                    with self._lock:
                        batch = list(self._queue)
                        self._queue.clear()
                        self._inflight = batch
                    try:
                        await self._apply(batch)
                    except Exception as exc:  # a bug here must not kill the writer
                        log.exception("session writer: unexpected failure")
                        self._fail_all(batch, self._conn.translate(exc))
                finally:
                    with self._lock:
                        self._inflight = []
                    self.busy = False
        except asyncio.CancelledError:
            # The loop is shutting down under us: tell every waiter rather than hang it.
            with self._lock:
                left = list(self._queue)
                self._queue.clear()
            for op in left:
                _fail(op.future, StorageClosedError(self._conn.path))
            raise

    async def _apply(self, batch: list[Op]) -> None:
        if any(_switches_route(op) for op in batch) and not self._tokens.idle:
            # SPEC S5: token deltas queued before a model/route/metadata change are written
            # before it; applied after it, an old delta would resurrect the previous model.
            try:
                await asyncio.to_thread(self._tokens.flush_token_counts)
            except StorageLockedError as exc:
                self._after_lock_timeout(batch, exc)
                return
        conn = self._conn
        async with conn.write_lock:
            try:
                await conn.begin_immediate()
            except StorageLockedError as exc:
                self._after_lock_timeout(batch, exc)
                return
            except Exception as exc:
                self._fail_all(batch, conn.translate(exc))
                return
            applied = await self._apply_each(batch)
            if applied is None:
                return  # put back in the queue, to be applied again
            try:
                await conn.execute("COMMIT")
            except Exception as exc:
                err = conn.translate(exc)
                self._report(err)
                await conn.rollback_quietly()
                for op, _ in applied:
                    _fail(op.future, err)
                return
        self.lock_blocked = False
        for op, value in applied:
            _resolve(op.future, value)

    async def _apply_each(self, batch: list[Op]) -> list[tuple[Op, Any]] | None:
        """Apply the batch's ops, one SAVEPOINT each, inside the open transaction.

        Returns the applied ops with their values, or None when the batch went back to the
        queue (the transaction was lost, or the search index must be rebuilt first).
        """
        conn = self._conn
        applied: list[tuple[Op, Any]] = []
        for i, op in enumerate(batch):
            if op.kind == BARRIER:
                applied.append((op, None))
                continue
            if op.future.cancelled():
                continue
            await conn.execute("SAVEPOINT queued_write")
            try:
                value = await self._apply_op(op)
            except Exception as exc:
                err = conn.translate(exc)
                if await self._failed_alone(op, err, applied, batch, rest=batch[i + 1 :]):
                    continue
                return None
            await conn.execute("RELEASE queued_write")
            applied.append((op, value))
        return applied

    async def _failed_alone(
        self,
        op: Op,
        err: StorageError,
        applied: list[tuple[Op, Any]],
        batch: list[Op],
        *,
        rest: list[Op],
    ) -> bool:
        """Deal with one op's failure; True when only that op is lost and the batch goes on."""
        conn = self._conn
        if isinstance(err, StorageIndexCorruptError) and conn.may_repair_index():
            # The index is derived from the messages: rebuild it and apply the whole batch
            # again rather than lose a message to it.
            await conn.rollback_quietly()
            self._requeue_front(batch)
            await conn.repair_index(err)
            return False
        self._report(err)
        _fail(op.future, err)
        if conn.in_transaction:
            await conn.execute("ROLLBACK TO queued_write")
            await conn.execute("RELEASE queued_write")
            return True
        # SQLite rolled the whole transaction back (disk full, I/O error): the writes before
        # this one are gone too, so queue them again, in order.
        self._requeue_front([o for o, _ in applied] + rest)
        return False

    def _fail_all(self, batch: list[Op], err: StorageError) -> None:
        self._report(err)
        for op in batch:
            _fail(op.future, err)

    def _requeue_front(self, ops: list[Op]) -> None:
        with self._lock:
            self._queue.extendleft(reversed(ops))

    def _after_lock_timeout(self, batch: list[Op], exc: StorageLockedError) -> None:
        """Keep every write queued (nothing is lost); fail the flushes that wait on them.

        Only a stopping writer whose exit wait has run out gives the writes up, and
        close() says what they were.
        """
        first, self.lock_blocked = not self.lock_blocked, True
        if first:  # once per episode, not once per retry window
            self._report(exc)
        give_up = self._stopping and time.monotonic() >= self._give_up_at
        with self._lock:
            pending = batch + list(self._queue)
            self._queue.clear()
            barriers = [op for op in pending if op.kind == BARRIER]
            writes = [op for op in pending if op.kind != BARRIER and not op.future.done()]
            if not give_up:
                self._queue.extend(writes)
        for op in barriers:
            _fail(op.future, exc)
        if give_up:
            for op in writes:
                _fail(op.future, exc)
            self._exit_wait.note_unsaved(Counter(op.kind for op in writes))
        elif self._stopping:
            self._exit_wait.announce()


def _switches_route(op: Op) -> bool:
    return op.kind == "session_update" and bool(FLUSH_FIRST_FIELDS & op.payload.keys())
