"""Token and cost accounting: the synchronous apply, the queue and its writer thread (S2-S7).

`update_token_counts(...)` applies one delta synchronously on the caller's thread: a
BEGIN IMMEDIATE transaction (jittered retry while another process holds the lock) that
updates the session's totals and upserts its (model, provider, route) row in
`session_model_usage`. `queue_token_counts(...)` takes the same arguments, but on the caller
it costs a check of the keyword names, a deque append of the raw arguments and (at most) one
lock release that wakes the writer; a lazily started daemon thread normalises the deltas and
applies them in enqueue order through the same apply path. What a delta is and how deltas
coalesce under a backlog (S3) is storage/deltas.py.

Why a thread and not the message writer's asyncio task: the accounting path must keep working
where no event loop runs any more (a drain at interpreter exit, an inline apply after close,
a flush from a thread while the loop is busy), and it has its own plain sqlite3 connection, so
a reader on the loop never waits on the loop to flush it.
"""

from __future__ import annotations

import atexit
import logging
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .deltas import (
    DELTA_FIELDS,
    REQUIRED_FIELDS,
    Delta,
    apply_in_transaction,
    coalesce,
    make_delta,
    normalise,
)
from .errors import StorageClosedError, StorageError, StorageLockedError, translate
from .sqlite import DEFAULT_LOCK_TIMEOUT, LockWindow, begin_immediate, connect

log = logging.getLogger("hermes_tui.storage")

# How often a waiter looks again on its own; a notify wakes it sooner, so the value only
# bounds a missed wake-up (any other would do as well).
POLL_SECONDS = 0.5  # pragma: no mutate
# How much longer than one lock window the exit drain waits for the writer to finish.
EXIT_JOIN_SLACK_SECONDS = 1.0  # pragma: no mutate
# The writer's pause between two lock windows, a moment for the other process.
LOCK_RETRY_PAUSE_SECONDS = 0.05  # pragma: no mutate


class TokenAccounting:
    """The accounting path of one database file: sync apply, queue, writer thread, drains."""

    def __init__(
        self,
        path: str | Path,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_error: Callable[[StorageError], None] | None = None,
        on_exit_wait: Callable[[], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.on_error = on_error
        # Called (on the writer's thread) when a stopping writer starts waiting on a lock.
        self.on_exit_wait = on_exit_wait
        # Deltas, or the raw (session_id, fields) of queue_token_counts (see as_delta).
        self._queue: deque[Delta | tuple[str, dict[str, Any]]] = deque()
        # Flushers and drains wait on _cond for the writer; the writer itself sleeps on
        # _wakeup, a Lock used as a binary semaphore: released (by a queue call that sees
        # _sleeping, or by stop_writer) = one pending wake-up. A release is one C call on
        # the caller, where Condition.notify is a Python-level lock dance.
        self._cond = threading.Condition(threading.Lock())  # pragma: no mutate (never re-entered)
        self._wakeup = threading.Lock()
        self._wakeup.acquire()
        # Serialises use of the one sqlite3 connection (writer thread, sync callers, drains).
        self._db_lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False  # the writer drains what is queued, then exits
        self._stopped = False  # the writer is gone for good: queue calls apply inline
        self._closed = False  # the connection is closed: applies raise StorageClosedError
        # Set under _cond *before* a batch is popped, cleared after it is applied, so the
        # lock-free fast path of flush (`not queue and not busy`) never misses a batch.
        self._busy = False
        self._sleeping = False  # the writer is (about to be) blocked on _wakeup
        # The error of the last batch that gave up on a held lock: a new one each time, so a
        # flush sees that a batch gave up meanwhile by its identity.
        self._lock_error: StorageLockedError | None = None
        self._lost_error: StorageError | None = None  # deltas dropped by a stopping writer
        # While stopping, a held lock is retried until this monotonic time (None: at once).
        self._give_up_at: float | None = None
        self.lock_blocked = False  # the last apply lost to another process's lock
        self.lost = 0  # deltas dropped because the lock outlasted the exit wait
        self._inflight = 0  # deltas popped by the writer and not yet applied
        self._atexit: Callable[[], None] | None = None

    # ------------------------------------------------------------------ connection

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageClosedError(self.path)
        if self._conn is None:
            # The same pragmas as the session store's connection: every commit is fsynced,
            # which is why the agent loop queues its deltas instead of waiting.
            try:
                self._conn = connect(self.path)
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
        return self._conn

    def set_trace_callback(self, trace: Callable[[str], None] | None) -> None:
        """Call trace(sql) for every statement the accounting connection runs (benchmarks)."""
        with self._db_lock:
            self._connection().set_trace_callback(trace)

    def _apply_batch(self, deltas: list[Delta]) -> list[tuple[Delta, StorageError]]:
        """Apply deltas in one BEGIN IMMEDIATE transaction (see deltas.apply_in_transaction).

        Raises StorageLockedError (nothing applied) when the lock stays held past the window,
        which the exit wait (give_up_at) bounds once close() has begun.
        """
        with self._db_lock:
            conn = self._connection()
            try:
                begin_immediate(conn, LockWindow(self.path, self.lock_timeout, self._give_up_at))
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            return apply_in_transaction(conn, deltas, self.path)

    def _report(self, err: StorageError) -> None:
        log.warning("token accounting write failed: %s", err)
        if self.on_error is not None:
            try:
                self.on_error(err)
            except Exception:
                log.exception("token accounting error callback failed")

    # ------------------------------------------------------------------ public API

    def update_token_counts(self, session_id: str, **fields: Any) -> None:
        """Apply one delta now, on the caller's thread; raises StorageError on failure."""
        delta = make_delta(session_id, **fields)
        failed = self._apply_batch([delta])
        if failed:
            raise failed[0][1]

    def queue_token_counts(self, session_id: str, **fields: Any) -> None:
        """Same arguments as update_token_counts; the caller pays an append and a wake-up.

        The arguments are queued raw: a missing session id or a wrong keyword raises here,
        at once; the writer builds the Delta, and a value it cannot convert (say
        input_tokens="many") is logged and dropped there. After close() has stopped the
        writer the delta is applied inline instead of parking on a queue nothing drains
        (and raises where update_token_counts would).
        """
        if not (session_id and REQUIRED_FIELDS <= fields.keys() <= DELTA_FIELDS):
            # Raises what update_token_counts would (a wrong keyword raises before the body
            # runs, so the session id given makes no difference to which error).
            make_delta(session_id, **fields)  # pragma: no mutate
        if self._stopped:
            failed = self._apply_batch([make_delta(session_id, **fields)])
            if failed:
                raise failed[0][1]
            return
        self._queue.append((session_id, fields))  # atomic; the writer pops under _cond
        if self._thread is None:
            with self._cond:
                if self._thread is None and not self._stopped:
                    self._start_writer()
        # The writer raises _sleeping *before* it looks at the queue, and this reads it
        # *after* the append: either the writer sees the delta or this wakes it.
        if self._sleeping:
            self._wake()
        if self._stopped:
            # Lost a race with stop_writer(): the writer may have exited before the append.
            self._drain_inline()

    def _wake(self) -> None:
        """Give the writer one pending wake-up (idempotent)."""
        try:
            self._wakeup.release()
        except RuntimeError:
            pass  # one is already pending

    @property
    def idle(self) -> bool:
        """Nothing queued and no batch in flight (read the queue first, then busy)."""
        return not self._queue and not self._busy

    def pending(self) -> int:
        """Deltas queued or being applied."""
        return len(self._queue) + self._inflight

    def flush_token_counts(self, timeout: float | None = None) -> None:
        """Return once every delta queued before this call is in the database.

        Lock-free when nothing is queued. A live writer (even one told to stop: it drains
        before exiting) is waited for; only a dead or never-started writer is drained on the
        caller's thread, claiming the busy flag so concurrent flushes wait instead of racing.
        Raises StorageLockedError if the writer gave up on a held lock meanwhile (the deltas
        stay queued).
        """
        if not self._queue and not self._busy:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            seen = self._lock_error
            while self._queue or self._busy:
                # Once set, _lock_error is never reset: "not seen" means a new error.
                if self._lock_error is not None and self._lock_error is not seen:
                    raise self._lock_error
                if self._writer_alive() or self._busy:
                    # The writer (or another flusher draining) will notify when it is done;
                    # it is never asleep on a queued delta: the queue call woke it.
                    wait = POLL_SECONDS if deadline is None else deadline - time.monotonic()
                    if wait <= 0:
                        raise TimeoutError("token accounting flush timed out")
                    self._cond.wait(min(wait, POLL_SECONDS))
                    continue
                # A dead writer: drain on this thread, as the writer would.
                self._busy = True
                batch = list(self._queue)
                self._queue.clear()
                break
            else:
                return
        try:
            self._apply_popped(batch, requeue=True)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        with self._cond:
            if self._lock_error is not None and self._lock_error is not seen and self._queue:
                raise self._lock_error

    def close(self, give_up_at: float | None = None) -> None:
        """Stop the writer (it drains first), drain any rest, unregister the exit drain, close.

        A held lock is retried until `give_up_at` (a time.monotonic() value; None: one
        window). Raises StorageLockedError when queued deltas could not be written because
        another process kept the database locked that long (they are lost, `lost` counts
        them, and the caller says so).
        """
        try:
            # A lock that outlasts the drain raises the error _drop_queue kept as _lost_error.
            self.stop_writer(give_up_at=give_up_at)
            self._drain_inline()
        finally:
            if self._atexit is not None:
                atexit.unregister(self._atexit)
                self._atexit = None
            with self._db_lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
        if self._lost_error is not None:
            raise self._lost_error  # deltas the stopping writer dropped

    def stop_writer(self, timeout: float | None = None, give_up_at: float | None = None) -> None:
        """Tell the writer to drain and exit, and wait for it; later queue calls apply inline.

        Until `give_up_at` (time.monotonic()) the writer keeps retrying a held lock.
        """
        with self._cond:
            # None: one ordinary lock window, as before there was an exit wait.
            self._give_up_at = (
                give_up_at if give_up_at is not None else time.monotonic() + self.lock_timeout
            )
            self._stopping = True
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        self._wake()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # ------------------------------------------------------------------ the writer

    def _start_writer(self) -> None:
        # Called under _cond on first use: the thread and the exit drain start together.
        self._thread = threading.Thread(
            target=self._run, name="hermes-token-accounting", daemon=True
        )
        self._thread.start()
        ref = weakref.ref(self)

        def drain_at_exit() -> None:
            # A weak reference: a closed instance is unregistered, a forgotten one is not
            # kept alive by the registry alone.
            accounting = ref()
            if accounting is not None:
                accounting._drain_at_exit()

        self._atexit = drain_at_exit
        atexit.register(drain_at_exit)

    def _writer_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _pop_batch(self) -> list[Delta | tuple[str, dict[str, Any]]]:
        batch = list(self._queue)
        self._queue.clear()
        return batch

    def _run(self) -> None:
        while True:
            # Raised *before* the queue is looked at: a queue call that appends after this
            # check sees it and wakes us (see queue_token_counts). A stale pending wake-up
            # only costs one more look at the queue.
            self._sleeping = True
            while not self._queue and not self._stopping:
                self._wakeup.acquire()
            # A stale True only costs a queue call one spare wake-up.
            self._sleeping = False  # pragma: no mutate
            with self._cond:
                if not self._queue:
                    if self._stopping:
                        return  # stopping, and everything is drained
                    # Only a stop empties the queue under a live writer, and a stop returns
                    # above: this look again is a safety net no run reaches.
                    continue  # pragma: no mutate
                self._busy = True  # before the pop: see flush_token_counts
                batch = self._pop_batch()
                self._inflight = len(batch)
            try:
                # Requeued on a held lock even while stopping: close() waits, bounded.
                gave_up = self._apply_popped(batch, requeue=True)
            except BaseException:
                log.exception("token accounting writer: unexpected failure")
                gave_up = False
            finally:
                with self._cond:
                    self._busy = False
                    self._inflight = 0
                    self._cond.notify_all()
            if gave_up:
                with self._cond:
                    if self._stopping and time.monotonic() >= (self._give_up_at or 0):
                        # close() cannot wait forever on another process's lock.
                        self._drop_queue()
                        return
                    waiting_at_exit = self._stopping
                    # Give the other process a moment before the next full retry window.
                    self._cond.wait(LOCK_RETRY_PAUSE_SECONDS)
                if waiting_at_exit and self.on_exit_wait is not None:
                    try:
                        self.on_exit_wait()
                    except Exception:
                        log.exception("token accounting exit-wait callback failed")

    def _drop_queue(self) -> None:
        """Give up on what is queued (under _cond): count it as lost, for close() to report."""
        lost = len(self._queue)
        self._queue.clear()
        if lost:
            self.lost += lost
            log.warning("token accounting: %d delta(s) not saved", lost)
        self._lost_error = self._lock_error

    def _apply_popped(
        self, batch: list[Delta | tuple[str, dict[str, Any]]], *, requeue: bool
    ) -> bool:
        """Normalise, coalesce and apply a popped batch. Returns True when a held lock won.

        Failures are logged and reported, never raised: a delta that fails on its own is
        dropped; when the database stays locked the batch goes back to the front of the
        queue (nothing lost) unless requeue is False.
        """
        merged = coalesce(normalise(batch))
        try:
            failed = self._apply_batch(merged)
        except StorageLockedError as exc:
            # Reported before the waiting flushers are woken: one that raises this error
            # must find it already recorded (last_write_error, the user's notice).
            first, self.lock_blocked = not self.lock_blocked, True
            if first:  # once per episode, not once per retry window
                self._report(exc)
            with self._cond:
                if requeue:
                    self._queue.extendleft(reversed(merged))
                self._lock_error = exc
                self._cond.notify_all()
            return True
        except StorageError as exc:
            self._report(exc)
            return False
        self.lock_blocked = False
        for _delta, err in failed:
            self._report(err)
        return False

    def _drain_inline(self) -> None:
        with self._cond:
            if not self._queue:
                return
            while self._busy:
                self._cond.wait(POLL_SECONDS)
            self._busy = True
            batch = self._pop_batch()
        try:
            locked = self._apply_popped(batch, requeue=True)
        finally:
            with self._cond:
                self._busy = False
                if locked:
                    self._drop_queue()
                self._cond.notify_all()
        if locked:
            assert self._lock_error is not None
            raise self._lock_error

    def _drain_at_exit(self) -> None:
        try:
            self.stop_writer(timeout=self.lock_timeout + EXIT_JOIN_SLACK_SECONDS)
            self._drain_inline()
        except Exception:
            log.exception("token accounting: drain at exit failed")
