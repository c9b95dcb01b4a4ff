"""Token accounting (SPEC S2-S7): coalescing rules, the queued writer, flushes, drains."""

from __future__ import annotations

import asyncio
import gc
import linecache
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import weakref
from collections import deque
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import released_by_flush
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waits import wait_until

from storage import SessionDB, StorageClosedError
from storage.accounting import TokenAccounting
from storage.deltas import (
    Delta,
    apply_delta,
    can_merge,
    coalesce,
    make_delta,
    merge,
    sum_costs,
)
from storage.schema import MIGRATIONS

ROOT = Path(__file__).resolve().parents[3]
SESSION_COLS = (
    "model, provider, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
    " reasoning_tokens, api_call_count, estimated_cost_usd, actual_cost_usd, estimated_calls"
)


def make_db(path: Path, sessions=("s1", "s2")) -> Path:
    """A migrated database file with the given sessions (model m / provider p)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for migration in MIGRATIONS:
        for statement in migration:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    for sid in sessions:
        conn.execute(
            "INSERT INTO sessions (id, model, provider) VALUES (?, 'm', 'p')",
            (sid,),
        )
    conn.close()
    return path


def rows(path_or_conn, sid: str = "s1"):
    conn = (
        path_or_conn
        if isinstance(path_or_conn, sqlite3.Connection)
        else sqlite3.connect(path_or_conn)
    )
    try:
        session = conn.execute(
            f"SELECT {SESSION_COLS} FROM sessions WHERE id = ?", (sid,)
        ).fetchone()
        usage = conn.execute(
            "SELECT * FROM session_model_usage WHERE session_id = ?"
            " ORDER BY model, provider, route",
            (sid,),
        ).fetchall()
    finally:
        if conn is not path_or_conn:
            conn.close()
    return session, usage


@pytest.fixture
def acct(tmp_path):
    accounting = TokenAccounting(make_db(tmp_path / "state.db"), lock_timeout=2)
    yield accounting
    accounting.close()


@contextmanager
def gated(accounting: TokenAccounting):
    """Hold the writer back: its applies wait until the gate opens (on exit, or by hand)."""
    gate = threading.Event()
    real = accounting._apply_batch

    def waiting(deltas):
        if threading.current_thread() is accounting._thread:
            gate.wait(30)
        return real(deltas)

    accounting._apply_batch = waiting
    try:
        yield gate
    finally:
        gate.set()
        accounting._apply_batch = real


def d(**kw) -> Delta:
    kw.setdefault("model", "m")
    kw.setdefault("provider", "p")
    return make_delta(kw.pop("session_id", "s1"), **kw)


# ------------------------------------------------------------------ merge rules (pure)


def test_adjacent_same_route_incremental_deltas_merge_with_exact_sums():
    """S3: adjacent incremental deltas of one route merge; counts and costs sum exactly."""
    a = d(input_tokens=3, output_tokens=1, reasoning_tokens=2, estimated_cost_usd=0.25)
    b = d(input_tokens=4, cache_read_tokens=7, cache_write_tokens=1, actual_cost_usd=0.5)
    assert can_merge(a, b)
    m = merge(a, b)
    assert (m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_write_tokens) == (
        7,
        1,
        7,
        1,
    )
    assert (m.reasoning_tokens, m.api_calls) == (2, 2)
    assert (m.estimated_cost_usd, m.actual_cost_usd) == (0.25, 0.5)
    assert coalesce([a, b, d(input_tokens=1)]) == [merge(merge(a, b), d(input_tokens=1))]


def test_different_route_session_or_model_never_merge():
    """S3: only adjacent deltas of the same session, model and route merge."""
    base = d()
    for other in (
        d(route="r2"),
        d(model="m2"),
        d(provider="p2"),
        d(session_id="s2"),
    ):
        assert not can_merge(base, other)
        assert coalesce([base, other]) == [base, other]
    # Same key, but not adjacent: order is kept, nothing jumps a different route.
    assert coalesce([d(), d(route="x"), d()]) == [d(), d(route="x"), d()]


def test_absolute_never_merges_and_is_a_barrier():
    """S3: an `absolute=True` delta never merges and is a barrier."""
    absolute = d(input_tokens=100, absolute=True)
    assert not can_merge(d(), absolute) and not can_merge(absolute, d())
    assert not can_merge(absolute, absolute)
    out = coalesce([d(input_tokens=1), d(input_tokens=2), absolute, d(input_tokens=5), d()])
    assert [x.absolute for x in out] == [False, True, False]
    assert [x.input_tokens for x in out] == [3, 100, 5]


def test_none_cost_sums_preserve_none():
    """S3: costs sum None-preservingly (all None stays None)."""
    assert sum_costs(None, None) is None
    assert sum_costs(None, 0.5) == 0.5 and sum_costs(0.5, None) == 0.5
    assert sum_costs(0.25, 0.5) == 0.75
    merged = coalesce([d(), d(), d()])[0]
    assert merged.estimated_cost_usd is None and merged.actual_cost_usd is None


# ------------------------------------------------------------------ row equivalence


def _memory_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for migration in MIGRATIONS:
        for statement in migration:
            conn.execute(statement)
    # s2 starts with an empty model (backfilled by its first accounted call) and a cost.
    conn.execute("INSERT INTO sessions (id, model, provider) VALUES ('s1', 'm', 'p')")
    conn.execute(
        "INSERT INTO sessions (id, model, provider, estimated_cost_usd) VALUES ('s2', '', '', 1.5)"
    )
    return conn


# Costs are multiples of 1/8 so float sums are exact in any order.
_cost = st.none() | st.integers(0, 64).map(lambda n: n / 8)
_delta = st.builds(
    lambda sid, model, route, counts, calls, est, act, absolute, guessed: make_delta(
        sid,
        model=model,
        provider="p",
        route=route,
        input_tokens=counts[0],
        output_tokens=counts[1],
        cache_read_tokens=counts[2],
        cache_write_tokens=counts[3],
        reasoning_tokens=counts[4],
        api_calls=calls,
        estimated_cost_usd=est,
        actual_cost_usd=act,
        absolute=absolute,
        estimated_calls=guessed,
    ),
    st.sampled_from(["s1", "s2"]),
    st.sampled_from(["m", "m2"]),
    st.sampled_from(["", "r"]),
    st.tuples(*[st.integers(0, 1000)] * 5),
    st.integers(0, 2),
    _cost,
    _cost,
    st.sampled_from([False, False, False, True]),
    st.integers(0, 1),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_delta, max_size=25))
def test_coalesced_apply_leaves_the_rows_sequential_applies_leave(deltas):
    """S3: a merged apply leaves exactly the rows that sequential applies would."""
    sequential, coalesced = _memory_db(), _memory_db()
    for delta in deltas:
        apply_delta(sequential, delta)
    merged = coalesce(deltas)
    assert len(merged) <= len(deltas)
    for delta in merged:
        apply_delta(coalesced, delta)
    for sid in ("s1", "s2"):
        assert rows(sequential, sid) == rows(coalesced, sid)


# ------------------------------------------------------------------ the writer on a file


def test_queue_applies_in_order_and_coalesces_a_backlog(acct):
    """S2, S3: the writer applies in order and a backlog coalesces into few UPDATEs."""
    updates: list[str] = []

    def count_updates(sql: str) -> None:
        head = sql.lstrip()[:40].upper()
        # The usage upsert updates a row too: count it as an UPDATE.
        if head.startswith(("UPDATE", "INSERT INTO SESSION_MODEL")):
            updates.append(head)

    acct.set_trace_callback(count_updates)
    with gated(acct) as gate:
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        for _ in range(999):
            acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        gate.set()
        acct.flush_token_counts()
    session, usage = rows(acct.path)
    assert session[2] == 1000 and session[7] == 1000
    assert usage[0][4] == 1000
    # The writer popped at most the first delta alone; the rest went as one merged apply.
    assert len(updates) <= 4


def test_none_cost_keeps_the_stored_value(acct):
    acct.update_token_counts("s1", model="m", provider="p", estimated_cost_usd=0.5)
    with gated(acct) as gate:
        for _ in range(5):
            acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        gate.set()
        acct.flush_token_counts()
    session, usage = rows(acct.path)
    assert session[8] == 0.5 and session[9] is None  # actual stays NULL, estimated kept
    assert usage[0][-3:-1] == (0.5, None)  # the costs; estimated_calls (migration 2) is last


def test_absolute_is_a_barrier_on_the_database(acct):
    with gated(acct) as gate:
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
        acct.queue_token_counts(
            "s1", model="m", provider="p", input_tokens=100, api_calls=7, absolute=True
        )
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
        gate.set()
        acct.flush_token_counts()
    session, _ = rows(acct.path)
    assert (session[2], session[7]) == (105, 8)


def test_flush_fast_path_and_busy_is_set_before_the_pop(acct):
    """S4: an idle flush is an attribute check; busy is set before the pop, never missed."""
    acct.flush_token_counts()  # never used: an attribute check
    assert acct._thread is None and acct._atexit is None  # the writer starts lazily
    seen: list[bool] = []
    real_pop = acct._pop_batch

    def pop_and_look():
        batch = real_pop()
        seen.append(acct.idle)  # what a lock-free flush sees right after the pop
        return batch

    acct._pop_batch = pop_and_look
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.flush_token_counts()
    assert seen and not any(seen)
    assert rows(acct.path)[0][2] == 1


def test_inline_apply_after_the_writer_stopped_and_raise_after_close(acct):
    """S6: after the writer stops a queued delta applies inline; after close it raises."""
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.stop_writer()
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=2)
    assert not acct._queue
    assert rows(acct.path)[0][2] == 3  # no flush needed: it was applied on this thread
    acct.close()
    with pytest.raises(StorageClosedError):
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=4)
    with pytest.raises(StorageClosedError):
        acct.update_token_counts("s1", model="m", provider="p", input_tokens=4)


def test_close_drains_and_unregisters_the_exit_drain(tmp_path, monkeypatch):
    """S6: the exit drain is registered on first use; close() drains and unregisters it."""
    registered: list = []
    fake = type(
        "FakeAtexit",
        (),
        {
            "register": staticmethod(registered.append),
            "unregister": staticmethod(registered.remove),
        },
    )
    monkeypatch.setattr("storage.accounting.atexit", fake)
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    assert registered == []
    with gated(accounting):
        for _ in range(50):
            accounting.queue_token_counts("s1", model="m", provider="p", output_tokens=2)
        assert len(registered) == 1  # registered on first use, once
    accounting.close()
    assert registered == []
    assert rows(path)[0][3] == 100
    ref = weakref.ref(accounting)
    del accounting
    gc.collect()
    assert ref() is None  # nothing pins a closed instance


_EXIT_WITHOUT_CLOSE = textwrap.dedent(
    """
    import atexit, sys, threading
    from storage.accounting import TokenAccounting

    acct = TokenAccounting(sys.argv[1])
    gate = threading.Event()
    real = acct._apply_batch
    def held(deltas):
        gate.wait(30)
        return real(deltas)
    acct._apply_batch = held
    for _ in range(20):
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    # Registered after the drain, so it runs before it: the writer is still held back
    # when the interpreter starts to exit, and only the exit drain can save the deltas.
    atexit.register(gate.set)
    sys.exit(0)
    """
)


def test_drain_at_interpreter_exit(tmp_path):
    """S6: a process that exits without close() still drains its queued deltas."""
    path = make_db(tmp_path / "state.db")
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT_WITHOUT_CLOSE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert rows(path)[0][2] == 20


def test_writer_failures_are_reported_and_survived(acct):
    errors = []
    acct.on_error = errors.append
    acct.queue_token_counts("ghost", model="m", provider="p", input_tokens=1)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.flush_token_counts()
    assert len(errors) == 1 and "ghost" in str(errors[0])
    # An unexpected failure inside the writer does not kill it either.
    real = acct._apply_batch
    calls = []

    def explode_once(deltas):
        if not calls:
            calls.append(1)
            raise RuntimeError("bug")
        return real(deltas)

    acct._apply_batch = explode_once
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
    acct.flush_token_counts()
    acct._apply_batch = real
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=100)
    acct.flush_token_counts()
    assert acct._thread.is_alive()
    assert rows(acct.path)[0][2] == 101


def test_concurrent_flushes_against_a_live_writer_read_their_writes(tmp_path):
    """S4, S7: every flusher reads its own writes; they wait for the live writer."""
    sessions = [f"t{i}" for i in range(8)]
    path = make_db(tmp_path / "state.db", sessions)
    accounting = TokenAccounting(path)
    failures: list[str] = []
    start = threading.Barrier(len(sessions))

    def worker(sid: str) -> None:
        reader = sqlite3.connect(path)
        start.wait()
        for n in range(1, 41):
            accounting.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
            if n % 4 == 0:
                accounting.flush_token_counts()
                got = reader.execute(
                    "SELECT input_tokens FROM sessions WHERE id = ?", (sid,)
                ).fetchone()[0]
                if got != n:
                    failures.append(f"{sid}: {got} != {n}")
        reader.close()

    threads = [threading.Thread(target=worker, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    accounting.close()
    assert failures == []


def test_a_dead_writer_is_drained_once_by_concurrent_flushes(acct):
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.flush_token_counts()
    # Let the writer exit as if it had died, without marking the instance stopped.
    with acct._cond:
        acct._stopping = True
    acct._wake()  # the writer sleeps on its wake-up lock, not on _cond
    acct._thread.join(5)
    assert not acct._thread.is_alive()
    acct._stopping = False
    for _ in range(10):
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    gate = threading.Event()
    real = acct._apply_batch

    def slow(deltas):
        gate.wait(30)
        return real(deltas)

    acct._apply_batch = slow
    results: list[int] = []

    def flush_and_read():
        acct.flush_token_counts()
        results.append(rows(acct.path)[0][2])

    first = threading.Thread(target=flush_and_read)
    first.start()
    # The first flush claimed the batch (busy); a second one must wait for it, not return.
    wait_until(lambda: acct._busy, timeout=5)
    second = threading.Thread(target=flush_and_read)
    second.start()
    wait_until(lambda: len(acct._cond._waiters) >= 1, timeout=5)
    assert results == []
    gate.set()
    first.join(10)
    second.join(10)
    assert results == [11, 11]


class _RacingQueue(deque):
    """The writer's queue, with a hook that runs a queue call at one chosen moment."""

    def __init__(self, accounting: TokenAccounting) -> None:
        super().__init__()
        self.accounting = accounting
        self.on_empty_check = None  # run on the writer thread when it finds the queue empty
        self.before_append = None  # run on the caller's thread before its next append

    def __len__(self) -> int:
        n = super().__len__()
        hook = self.on_empty_check
        if n == 0 and hook and threading.current_thread() is self.accounting._thread:
            self.on_empty_check = None
            hook()
        return n  # what the writer saw, however stale the hook made it

    def append(self, item) -> None:
        hook, self.before_append = self.before_append, None
        if hook:
            hook()
        super().append(item)


def _queue_from_another_thread(accounting: TokenAccounting, tokens: int) -> None:
    caller = threading.Thread(
        target=accounting.queue_token_counts,
        args=("s1",),
        kwargs={"model": "m", "provider": "p", "input_tokens": tokens},
    )
    caller.start()
    caller.join(10)


def test_a_delta_queued_as_the_writer_goes_to_sleep_is_written_without_a_flush(acct):
    # The writer has applied a batch and found the queue empty; before it blocks, a caller
    # on another thread appends. The writer must be woken: nothing flushes here.
    race = acct._queue = _RacingQueue(acct)
    race.on_empty_check = lambda: _queue_from_another_thread(acct, 10)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    wait_until(lambda: race.on_empty_check is None, timeout=5)
    wait_until(
        lambda: rows(acct.path)[0][2] == 11,
        timeout=5,
        what="the delta written (a lost wake-up leaves it queued)",
    )


def parked_in_a_lock(thread: threading.Thread) -> bool:
    """Whether `thread` is blocked acquiring a lock of its own (not waiting on a Condition)."""
    frame = sys._current_frames().get(thread.ident)
    if frame is None or frame.f_code.co_filename == threading.__file__:
        return False
    return ".acquire(" in linecache.getline(frame.f_code.co_filename, frame.f_lineno)


def test_a_writer_that_falls_asleep_during_a_queue_call_is_woken(acct):
    # The opposite interleaving: the writer goes to sleep while a caller is inside its
    # queue call, just before the append. The caller must still wake it.
    race = acct._queue = _RacingQueue(acct)
    with gated(acct) as gate:
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        wait_until(lambda: acct._busy, timeout=5)  # the writer is held in its first batch

        def let_the_writer_fall_asleep() -> None:
            gate.set()
            wait_until(lambda: acct.idle and acct._sleeping, timeout=5)
            # From "about to block" to blocked on its wake-up lock.
            wait_until(lambda: parked_in_a_lock(acct._thread), timeout=5)

        race.before_append = let_the_writer_fall_asleep
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
        assert race.before_append is None
        wait_until(
            lambda: rows(acct.path)[0][2] == 11,
            timeout=5,
            what="the delta written (a lost wake-up leaves it queued)",
        )


def test_queue_call_checks_names_at_once_and_the_writer_drops_bad_values(acct, caplog):
    with pytest.raises(ValueError):
        acct.queue_token_counts("", model="m", provider="p")
    with pytest.raises(TypeError):
        acct.queue_token_counts("s1", model="m", provider="p", tokens=1)
    with pytest.raises(TypeError):
        acct.queue_token_counts("s1", model="m", input_tokens=1)
    # A value make_delta cannot convert is found by the writer: logged, dropped, survived.
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens="many")
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=3)
    acct.flush_token_counts()
    assert rows(acct.path)[0][2] == 3
    assert "bad values" in caplog.text
    assert acct._thread.is_alive()


# ------------------------------------------------------------------ through SessionDB


@pytest.mark.parametrize("reader", ["get_session", "list_sessions", "find_session"])
async def test_every_reader_reads_through_the_queue(db, session, reader):
    """S4: every reader of tokens or cost reads through the queue (read-your-writes)."""
    sid = session["id"]
    with released_by_flush(db):
        db.queue_token_counts(sid, model="gpt-test", provider="openai", input_tokens=42)
        if reader == "get_session":
            got = (await db.get_session(sid))["input_tokens"]
        elif reader == "list_sessions":
            got = (await db.list_sessions())[0]["input_tokens"]
        else:
            got = (await db.find_session(sid))["input_tokens"]
    assert got == 42


@pytest.mark.parametrize("path", ["direct", "queued"])
async def test_an_old_route_delta_never_resurrects_the_previous_model(db, path):
    sid = (await db.create_session(model="old", provider="old-p", workspace="/w"))["id"]
    with released_by_flush(db):
        # The first delta of the session, still queued, carries the pre-switch route.
        db.queue_token_counts(sid, model="old", provider="old-p", input_tokens=5)
        if path == "direct":
            await db.update_session(sid, model="new", provider="new-p")
        else:
            db.enqueue_session_update(sid, model="new", provider="new-p")
            await db._writer.flush()
    await db.flush()
    got = await db.get_session(sid)
    assert (got["model"], got["provider"], got["input_tokens"]) == ("new", "new-p", 5)


async def test_session_db_close_drains_the_token_queue(tmp_path):
    """S6: SessionDB.close() stops and drains the writer; a later queue call raises."""
    db = await SessionDB.open(tmp_path / "state.db")
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    with gated(db.accounting) as gate:
        for _ in range(30):
            db.queue_token_counts(sid, model="m", provider="p", output_tokens=1)
        gate.set()
        await db.close()
    db = await SessionDB.open(tmp_path / "state.db")
    assert (await db.get_session(sid))["output_tokens"] == 30
    await db.close()
    with pytest.raises(StorageClosedError):
        db.queue_token_counts(sid, model="m", provider="p", output_tokens=1)


async def test_writer_failure_reaches_the_db_error_hook_on_the_loop(db, session):
    seen: list[tuple[str, bool]] = []
    loop_thread = threading.get_ident()
    got_it = asyncio.Event()

    def hook(reason: str) -> None:
        seen.append((reason, threading.get_ident() == loop_thread))
        got_it.set()

    db.on_write_error = hook
    db.queue_token_counts("ghost", model="m", provider="p", input_tokens=1)
    await db.flush()
    await asyncio.wait_for(got_it.wait(), 5)
    assert "ghost" in db.last_write_error
    assert seen == [(db.last_write_error, True)]
