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
from typing import TYPE_CHECKING, Any

from .errors import (
    StorageClosedError,
    StorageError,
    StorageIndexCorruptError,
    StorageLockedError,
)

if TYPE_CHECKING:
    from .db import SessionDB

log = logging.getLogger("hermes_tui.storage")

BARRIER = "barrier"


@dataclass(slots=True)
class Op:
    """One queued write (or a flush barrier) and the future its caller holds."""

    kind: str
    session_id: str
    payload: Any
    future: concurrent.futures.Future | asyncio.Future


def _resolve(fut: concurrent.futures.Future | asyncio.Future, value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: concurrent.futures.Future | asyncio.Future, exc: BaseException) -> None:
    if fut.done():
        return
    fut.set_exception(exc)
    if isinstance(fut, asyncio.Future):
        # A flush barrier whose flusher went away must not log "exception never retrieved".
        fut.exception()


class Writer:
    """The write queue of one SessionDB and the task that drains it on the owning loop."""

    def __init__(self, db: SessionDB, loop: asyncio.AbstractEventLoop) -> None:
        self._db = db
        self._loop = loop
        self._queue: deque[Op] = deque()
        # Guards queue mutation against iteration (requeue after a lock timeout) and the
        # closed flag against late enqueues; held for a few bytecodes only.
        self._lock = threading.Lock()
        self._wake = asyncio.Event()
        self._notify_pending = False
        self._task: asyncio.Task | None = None
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
                raise StorageClosedError(self._db.path)
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
            raise StorageClosedError(self._db.path) from None

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
        barrier: asyncio.Future = self._loop.create_future()
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
                        err = self._db._translate(exc)
                        self._db._record_write_error(err)
                        for op in batch:
                            _fail(op.future, err)
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
                _fail(op.future, StorageClosedError(self._db.path))
            raise

    async def _apply(self, batch: list[Op]) -> None:
        db = self._db
        if any(_switches_route(op) for op in batch) and not db.accounting.idle:
            # SPEC S5: token deltas queued before a model/route/metadata change are written
            # before it; applied after it, an old delta would resurrect the previous model.
            try:
                await asyncio.to_thread(db.accounting.flush_token_counts)
            except StorageLockedError as exc:
                self._after_lock_timeout(batch, exc)
                return
        async with db._write_lock:
            try:
                await db._begin_immediate()
            except StorageLockedError as exc:
                self._after_lock_timeout(batch, exc)
                return
            except Exception as exc:
                err = db._translate(exc)
                db._record_write_error(err)
                for op in batch:
                    _fail(op.future, err)
                return
            applied: list[tuple[Op, Any]] = []
            for i, op in enumerate(batch):
                if op.kind == BARRIER:
                    applied.append((op, None))
                    continue
                if op.future.cancelled():
                    continue
                await db._execute("SAVEPOINT queued_write")
                try:
                    value = await db._apply_op(op)
                except Exception as exc:
                    err = db._translate(exc)
                    if isinstance(err, StorageIndexCorruptError) and db._may_repair_index():
                        # The index is derived from the messages: rebuild it and apply the
                        # whole batch again rather than lose a message to it.
                        await db._rollback_quietly()
                        self._requeue_front(batch)
                        await db._repair_index(err)
                        return
                    db._record_write_error(err)
                    _fail(op.future, err)
                    if db._in_transaction():
                        await db._execute("ROLLBACK TO queued_write")
                        await db._execute("RELEASE queued_write")
                        continue
                    # SQLite rolled the whole transaction back (disk full, I/O error): the
                    # writes before this one are gone too, so queue them again, in order.
                    self._requeue_front([o for o, _ in applied] + batch[i + 1 :])
                    return
                await db._execute("RELEASE queued_write")
                applied.append((op, value))
            try:
                await db._execute("COMMIT")
            except Exception as exc:
                err = db._translate(exc)
                db._record_write_error(err)
                await db._rollback_quietly()
                for op, _ in applied:
                    _fail(op.future, err)
                return
        self.lock_blocked = False
        for op, value in applied:
            _resolve(op.future, value)

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
            self._db._record_write_error(exc)
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
            self._db._note_unsaved(Counter(op.kind for op in writes))
        elif self._stopping:
            self._db._announce_exit_wait()


def _switches_route(op: Op) -> bool:
    from .db import FLUSH_FIRST_FIELDS

    return op.kind == "session_update" and bool(FLUSH_FIRST_FIELDS & op.payload.keys())


def run_threadsafe(
    loop: asyncio.AbstractEventLoop,
    loop_thread: int | None,
    coro_fn: Callable[..., Awaitable[Any]],
    args: tuple,
    kwargs: dict,
    timeout: float,
) -> Any:
    """Run coro_fn(*args, **kwargs) on loop from another thread and return its result."""
    if threading.get_ident() == loop_thread:
        raise RuntimeError(
            "SessionDB.call/flush_threadsafe would deadlock on the loop that owns the database; "
            "await the async method instead"
        )
    if loop.is_closed():
        raise StorageError("the event loop that owns the session database has stopped")
    fut = asyncio.run_coroutine_threadsafe(coro_fn(*args, **kwargs), loop)
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        raise
