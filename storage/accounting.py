"""Token and cost accounting: deltas, their coalescing rules, and the queued writer (S2-S7).

`update_token_counts(...)` applies one delta synchronously on the caller's thread: a
BEGIN IMMEDIATE transaction (jittered retry while another process holds the lock) that
updates the session's totals and upserts its (model, provider, route) row in
`session_model_usage`. `queue_token_counts(...)` takes the same arguments, but on the caller
it costs a check of the keyword names, a deque append of the raw arguments and (at most) one
lock release that wakes the writer; a lazily started daemon thread normalises the deltas and
applies them in enqueue order through the same apply path.

Why a thread and not the message writer's asyncio task: the accounting path must keep working
where no event loop runs any more (a drain at interpreter exit, an inline apply after close,
a flush from a thread while the loop is busy), and it has its own plain sqlite3 connection, so
a reader on the loop never waits on the loop to flush it.

Coalescing (S3): when a backlog forms, adjacent incremental deltas of the same session and
route (model, provider, route) merge into one apply: token and call counts sum; costs sum
None-preservingly (all None stays None, so the stored value is kept). `absolute=True` deltas
never merge and are barriers. A merged apply leaves exactly the rows sequential applies would.

No Textual, agent or hermes_tui imports here.
"""

from __future__ import annotations

import atexit
import logging
import random
import sqlite3
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import (
    StorageClosedError,
    StorageError,
    StorageLockedError,
    UnknownSessionError,
    is_busy,
    translate,
)
from .schema import USAGE_COUNTERS

log = logging.getLogger("hermes_tui.storage")

_BUSY_TIMEOUT_MS = 50
_COSTS = ("estimated_cost_usd", "actual_cost_usd")


@dataclass(slots=True)
class Delta:
    """One token/cost delta for one session and route; `absolute` sets instead of adds."""

    session_id: str
    model: str
    provider: str
    route: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 1
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None
    absolute: bool = False

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The attribution key: session and route. Only equal keys may merge."""
        return (self.session_id, self.model, self.provider, self.route)


def make_delta(
    session_id: str,
    *,
    model: str,
    provider: str,
    route: str | None = "",
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    api_calls: int = 1,
    estimated_cost_usd: float | None = None,
    actual_cost_usd: float | None = None,
    absolute: bool = False,
) -> Delta:
    """Validate and normalise the arguments of update/queue_token_counts into a Delta."""
    if not session_id:
        raise ValueError("a token delta needs a session id")
    return Delta(
        str(session_id),
        model or "",
        provider or "",
        route or "",
        int(input_tokens or 0),
        int(output_tokens or 0),
        int(cache_read_tokens or 0),
        int(cache_write_tokens or 0),
        int(reasoning_tokens or 0),
        int(api_calls or 0),
        None if estimated_cost_usd is None else float(estimated_cost_usd),
        None if actual_cost_usd is None else float(actual_cost_usd),
        bool(absolute),
    )


# queue_token_counts checks on the caller only what is cheap: a session id and the keyword
# names (the TypeError make_delta would raise). The values are normalised by make_delta on
# the writer thread.
_FIELDS = frozenset(Delta.__slots__) - {"session_id"}
_REQUIRED = frozenset({"model", "provider"})


def as_delta(item: Delta | tuple[str, dict]) -> Delta:
    """A queued item as a Delta: either one already, or raw (session_id, fields)."""
    if type(item) is Delta:
        return item
    session_id, fields = item
    return make_delta(session_id, **fields)


def sum_costs(a: float | None, b: float | None) -> float | None:
    """None-preserving sum: None + None is None (keep the stored value), else None counts 0."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def can_merge(a: Delta, b: Delta) -> bool:
    """Two adjacent deltas merge only when both are incremental and their keys are equal."""
    return not a.absolute and not b.absolute and a.key == b.key


def merge(a: Delta, b: Delta) -> Delta:
    """The one delta whose apply equals applying a, then b (requires can_merge(a, b))."""
    return replace(
        a,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        api_calls=a.api_calls + b.api_calls,
        estimated_cost_usd=sum_costs(a.estimated_cost_usd, b.estimated_cost_usd),
        actual_cost_usd=sum_costs(a.actual_cost_usd, b.actual_cost_usd),
    )


def coalesce(deltas: Iterable[Delta]) -> list[Delta]:
    """Merge runs of adjacent mergeable deltas, keeping order; absolute deltas stand alone."""
    out: list[Delta] = []
    for delta in deltas:
        if out and can_merge(out[-1], delta):
            out[-1] = merge(out[-1], delta)
        else:
            out.append(delta)
    return out


# ---------------------------------------------------------------------------------- SQL

_COUNTER_ASSIGN = ", ".join(f"{c} = {c} + :{c}" for c in USAGE_COUNTERS)
_COUNTER_SET = ", ".join(f"{c} = :{c}" for c in USAGE_COUNTERS)
# A None cost delta keeps the stored value; a number adds to it (a stored NULL counts as 0).
_COST_ADD = ", ".join(
    f"{c} = CASE WHEN :{c} IS NULL THEN {c} ELSE coalesce({c}, 0) + :{c} END" for c in _COSTS
)
_COST_SET = ", ".join(f"{c} = coalesce(:{c}, {c})" for c in _COSTS)
# The first accounted call (api_call_count still 0) says which model and provider actually
# served the session: it backfills them. This is why a delta queued before a model switch
# must be applied before the switch is written (S5): applied after it, it would put the
# previous model back.
_BACKFILL = (
    "model = CASE WHEN api_call_count = 0 OR coalesce(model, '') = '' THEN :model ELSE model END,"
    " provider = CASE WHEN api_call_count = 0 OR coalesce(provider, '') = ''"
    " THEN :provider ELSE provider END"
)

SESSION_ADD_SQL = (
    f"UPDATE sessions SET {_BACKFILL}, {_COUNTER_ASSIGN},"
    f" api_call_count = api_call_count + :api_calls, {_COST_ADD} WHERE id = :session_id"
)
SESSION_SET_SQL = (
    f"UPDATE sessions SET {_BACKFILL}, {_COUNTER_SET}, api_call_count = :api_calls,"
    f" {_COST_SET} WHERE id = :session_id"
)
_USAGE_INSERT = (
    "INSERT INTO session_model_usage (session_id, model, provider, route,"
    f" {', '.join(USAGE_COUNTERS)}, api_call_count, estimated_cost_usd, actual_cost_usd)"
    " VALUES (:session_id, :model, :provider, :route,"
    f" {', '.join(':' + c for c in USAGE_COUNTERS)}, :api_calls,"
    " :estimated_cost_usd, :actual_cost_usd)"
    " ON CONFLICT (session_id, model, provider, route) DO UPDATE SET "
)
USAGE_ADD_SQL = _USAGE_INSERT + ", ".join(
    [f"{c} = {c} + excluded.{c}" for c in USAGE_COUNTERS]
    + ["api_call_count = api_call_count + excluded.api_call_count"]
    + [
        f"{c} = CASE WHEN excluded.{c} IS NULL THEN {c} ELSE coalesce({c}, 0) + excluded.{c} END"
        for c in _COSTS
    ]
)
USAGE_SET_SQL = _USAGE_INSERT + ", ".join(
    [f"{c} = excluded.{c}" for c in USAGE_COUNTERS]
    + ["api_call_count = excluded.api_call_count"]
    + [f"{c} = coalesce(excluded.{c}, {c})" for c in _COSTS]
)


def _params(delta: Delta) -> dict:
    return {
        "session_id": delta.session_id,
        "model": delta.model,
        "provider": delta.provider,
        "route": delta.route,
        "input_tokens": delta.input_tokens,
        "output_tokens": delta.output_tokens,
        "cache_read_tokens": delta.cache_read_tokens,
        "cache_write_tokens": delta.cache_write_tokens,
        "reasoning_tokens": delta.reasoning_tokens,
        "api_calls": delta.api_calls,
        "estimated_cost_usd": delta.estimated_cost_usd,
        "actual_cost_usd": delta.actual_cost_usd,
    }


def apply_delta(conn: sqlite3.Connection, delta: Delta) -> None:
    """Apply one delta inside the caller's open transaction: the sessions row, then usage."""
    params = _params(delta)
    cur = conn.execute(SESSION_SET_SQL if delta.absolute else SESSION_ADD_SQL, params)
    if cur.rowcount == 0:
        raise UnknownSessionError(delta.session_id)
    conn.execute(USAGE_SET_SQL if delta.absolute else USAGE_ADD_SQL, params)


# ---------------------------------------------------------------------------------- writer


class TokenAccounting:
    """The accounting path of one database file: sync apply, queue, writer thread, drains."""

    def __init__(
        self,
        path: str | Path,
        *,
        lock_timeout: float = 5.0,
        on_error: Callable[[StorageError], None] | None = None,
        on_exit_wait: Callable[[], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.on_error = on_error
        # Called (on the writer's thread) when a stopping writer starts waiting on a lock.
        self.on_exit_wait = on_exit_wait
        # Deltas, or the raw (session_id, fields) of queue_token_counts (see as_delta).
        self._queue: deque[Delta | tuple[str, dict]] = deque()
        # Flushers and drains wait on _cond for the writer; the writer itself sleeps on
        # _wakeup, a Lock used as a binary semaphore: released (by a queue call that sees
        # _sleeping, or by stop_writer) = one pending wake-up. A release is one C call on
        # the caller, where Condition.notify is a Python-level lock dance.
        self._cond = threading.Condition(threading.Lock())
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
        self._lock_failures = 0  # bumped each time a batch gives up on a held lock
        self._lock_error: StorageLockedError | None = None
        self._lost_error: StorageError | None = None  # deltas dropped by a stopping writer
        # While stopping, a held lock is retried until this monotonic time (None: at once).
        self._give_up_at: float | None = None
        self.lock_blocked = False  # the last apply lost to another process's lock
        self.lost = 0  # deltas dropped because the lock outlasted the exit wait
        self._inflight = 0  # deltas popped by the writer and not yet applied
        self._atexit: Callable[[], None] | None = None
        self.statements = 0  # UPDATE/upsert statements issued (for benchmarks and tests)

    # ------------------------------------------------------------------ connection

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageClosedError(self.path)
        if self._conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
                conn.execute("PRAGMA foreign_keys = ON")
                # The same durability as the session store (storage/db.py): every commit is
                # fsynced, which is why the agent loop queues its deltas instead of waiting.
                conn.execute("PRAGMA synchronous = FULL")
            except sqlite3.Error as exc:
                raise translate(exc, self.path) from exc
            self._conn = conn
        return self._conn

    def _apply_batch(self, deltas: list[Delta]) -> list[tuple[Delta, StorageError]]:
        """Apply deltas in one BEGIN IMMEDIATE transaction, one SAVEPOINT each.

        Returns the deltas that failed on their own (e.g. an unknown session), which are
        dropped. Raises StorageLockedError (nothing applied) when the lock stays held, and
        any other StorageError when the whole transaction failed.
        """
        failed: list[tuple[Delta, StorageError]] = []
        with self._db_lock:
            conn = self._connection()
            self._begin_immediate(conn)
            try:
                for delta in deltas:
                    conn.execute("SAVEPOINT delta")
                    try:
                        self.statements += 2
                        apply_delta(conn, delta)
                    except (sqlite3.Error, StorageError) as exc:
                        if not conn.in_transaction:
                            raise
                        conn.execute("ROLLBACK TO delta")
                        failed.append((delta, translate(exc, self.path)))
                    conn.execute("RELEASE delta")
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        log.debug("rollback failed", exc_info=True)
                if isinstance(exc, sqlite3.Error):
                    raise translate(exc, self.path) from exc
                raise
        return failed

    def _begin_immediate(self, conn: sqlite3.Connection) -> None:
        deadline = time.monotonic() + self.lock_timeout
        if self._give_up_at is not None:
            deadline = min(deadline, self._give_up_at)  # the exit wait bounds every window
        delay = 0.01
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise translate(exc, self.path) from exc
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StorageLockedError(self.path) from exc
                # Jitter so two waiting processes do not retry in lockstep.
                time.sleep(min(remaining, random.uniform(delay / 2, delay)))
                delay = min(delay * 2, 0.2)

    def _report(self, err: StorageError) -> None:
        log.warning("token accounting write failed: %s", err)
        if self.on_error is not None:
            try:
                self.on_error(err)
            except Exception:
                log.exception("token accounting error callback failed")

    # ------------------------------------------------------------------ public API

    def update_token_counts(self, session_id: str, **fields) -> None:
        """Apply one delta now, on the caller's thread; raises StorageError on failure."""
        delta = make_delta(session_id, **fields)
        failed = self._apply_batch([delta])
        if failed:
            raise failed[0][1]

    def queue_token_counts(self, session_id: str, **fields) -> None:
        """Same arguments as update_token_counts; the caller pays an append and a wake-up.

        The arguments are queued raw: a missing session id or a wrong keyword raises here,
        at once; the writer builds the Delta, and a value it cannot convert (say
        input_tokens="many") is logged and dropped there. After close() has stopped the
        writer the delta is applied inline instead of parking on a queue nothing drains
        (and raises where update_token_counts would).
        """
        if not (session_id and _REQUIRED <= fields.keys() <= _FIELDS):
            make_delta(session_id, **fields)  # raises what update_token_counts would
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
            failures = self._lock_failures
            while self._queue or self._busy:
                if self._lock_failures != failures:
                    assert self._lock_error is not None
                    raise self._lock_error
                if self._writer_alive() or self._busy:
                    # The writer (or another flusher draining) will notify when it is done.
                    if self._sleeping and self._queue:
                        self._wake()  # belt and braces: a queue call always wakes it
                    wait = 0.5 if deadline is None else deadline - time.monotonic()
                    if wait <= 0:
                        raise TimeoutError("token accounting flush timed out")
                    self._cond.wait(min(wait, 0.5))
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
            if self._lock_failures != failures and self._queue:
                assert self._lock_error is not None
                raise self._lock_error

    def close(self, give_up_at: float | None = None) -> None:
        """Stop the writer (it drains first), drain any rest, unregister the exit drain, close.

        A held lock is retried until `give_up_at` (a time.monotonic() value; None: one
        window). Raises StorageLockedError when queued deltas could not be written because
        another process kept the database locked that long (they are lost, `lost` counts
        them, and the caller says so).
        """
        error: StorageError | None = None
        try:
            self.stop_writer(give_up_at=give_up_at)
            self._drain_inline()
        except StorageError as exc:
            error = exc
        finally:
            error = error or self._lost_error
            if self._atexit is not None:
                atexit.unregister(self._atexit)
                self._atexit = None
            with self._db_lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
        if error is not None:
            raise error

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

    def _pop_batch(self) -> list[Delta | tuple[str, dict]]:
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
            self._sleeping = False
            with self._cond:
                if not self._queue:
                    if self._stopping:
                        return  # stopping, and everything is drained
                    continue  # drained by someone else meanwhile
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
                    self._cond.wait(0.05)
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

    def _apply_popped(self, batch: list[Delta | tuple[str, dict]], *, requeue: bool) -> bool:
        """Normalise, coalesce and apply a popped batch. Returns True when a held lock won.

        Failures are logged and reported, never raised: a delta that fails on its own is
        dropped; when the database stays locked the batch goes back to the front of the
        queue (nothing lost) unless requeue is False.
        """
        merged = coalesce(self._deltas(batch))
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
                self._lock_failures += 1
                self._cond.notify_all()
            return True
        except StorageError as exc:
            self._report(exc)
            return False
        self.lock_blocked = False
        for _delta, err in failed:
            self._report(err)
        return False

    @staticmethod
    def _deltas(batch: list[Delta | tuple[str, dict]]) -> list[Delta]:
        deltas = []
        for item in batch:
            try:
                deltas.append(as_delta(item))
            except (TypeError, ValueError, OverflowError):
                log.exception("token accounting: dropped a delta with bad values %r", item)
        return deltas

    def _drain_inline(self) -> None:
        with self._cond:
            if not self._queue:
                return
            while self._busy:
                self._cond.wait(0.5)
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
            self.stop_writer(timeout=self.lock_timeout + 1)
            self._drain_inline()
        except Exception:
            log.exception("token accounting: drain at exit failed")
