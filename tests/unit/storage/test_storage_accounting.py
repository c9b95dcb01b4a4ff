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
import time
import weakref
from collections import deque
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import held_write_lock, released_by_flush
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waits import wait_until

from storage import SessionDB, StorageClosedError, StorageFullError, StorageLockedError
from storage.accounting import TokenAccounting
from storage.deltas import (
    Delta,
    apply_delta,
    apply_in_transaction,
    can_merge,
    coalesce,
    make_delta,
    merge,
    sum_costs,
)
from storage.errors import StorageError, UnknownSessionError
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


GATE_SECONDS = 60.0
"""How long a gated writer is held: a wait that is not bounded as told waits it all out."""
BOUNDED = 15.0
"""What a bounded wait (a fraction of a second to a few) may take on a loaded machine: a
quarter of the minute that an unbounded one would wait."""


@contextmanager
def gated(accounting: TokenAccounting):
    """Hold the writer back: its applies wait until the gate opens (on exit, or by hand)."""
    gate = threading.Event()
    real = accounting._apply_batch

    def waiting(deltas):
        if threading.current_thread() is accounting._thread:
            gate.wait(GATE_SECONDS)
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
    # The writer popped at most the first delta alone; the rest went as one merged apply
    # (and the trace saw them: each apply is an UPDATE and an upsert).
    assert 2 <= len(updates) <= 4


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
    with pytest.raises(ValueError, match=r"^a token delta needs a session id$"):
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


# ------------------------------------------------------------------ gaps closed (issue 21)


def usage_row(path, sid="s1"):
    """The one usage row of `sid`, without its key columns."""
    (row,) = rows(path, sid)[1]
    return row[4:]


def test_s3_an_absolute_delta_sets_the_usage_row_as_well_as_the_session(acct):
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=10, output_tokens=3)
    acct.update_token_counts(
        "s1", model="m", provider="p", input_tokens=4, cache_read_tokens=2, api_calls=3,
        estimated_cost_usd=0.5, absolute=True,
    )  # fmt: skip
    session, _ = rows(acct.path)
    assert session[2:10] == (4, 0, 2, 0, 0, 3, 0.5, None)
    assert usage_row(acct.path) == (4, 0, 2, 0, 0, 3, 0.5, None, 0)  # ..., estimated_calls
    # None costs keep what is stored, on both rows.
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=1, absolute=True)
    assert rows(acct.path)[0][8] == 0.5 and usage_row(acct.path)[6:8] == (0.5, None)


def test_s2_a_delta_with_no_call_adds_no_call(acct):
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=5, api_calls=0)
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=5, api_calls=None)
    session, _ = rows(acct.path)
    assert (session[2], session[7]) == (10, 0)
    assert usage_row(acct.path)[5] == 0


def test_s2_calls_whose_counts_are_estimates_are_counted_on_both_rows(acct):
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=5, estimated_calls=1)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=5, estimated_calls=2)
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=5, estimated_calls=None)
    acct.flush_token_counts()
    session, _ = rows(acct.path)
    assert (session[2], session[-1]) == (15, 3) and usage_row(acct.path)[-1] == 3


def test_s2_the_first_accounted_call_backfills_the_model_and_provider(tmp_path):
    path = make_db(tmp_path / "state.db", sessions=())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO sessions (id, model, provider) VALUES ('s1', '', NULL)")
    conn.close()
    accounting = TokenAccounting(path)
    try:
        accounting.update_token_counts("s1", model="served", provider="prov", input_tokens=1)
        accounting.update_token_counts("s1", model="other", provider="other", input_tokens=1)
    finally:
        accounting.close()
    assert rows(path)[0][:3] == ("served", "prov", 2)


def test_s2_the_sync_path_waits_out_a_briefly_held_lock(acct, monkeypatch):
    """A lock held for a moment is waited for, within the window, never given up at once."""
    import storage.sqlite

    real = storage.sqlite.LockWindow.pause_after
    pauses: list[float] = []

    with held_write_lock(acct.path) as release:

        def pause_after(window, exc):
            pause = real(window, exc)  # raises when the window has already passed
            pauses.append(pause)
            release.set()  # the other process lets go once we wait for it
            return pause

        monkeypatch.setattr(storage.sqlite.LockWindow, "pause_after", pause_after)
        acct.update_token_counts("s1", model="m", provider="p", input_tokens=7)
    assert pauses and rows(acct.path)[0][2] == 7


def test_s4_a_flush_with_a_timeout_gives_up_in_time(acct):
    with gated(acct) as gate:
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        wait_until(lambda: acct._busy, timeout=5)
        safety = threading.Timer(GATE_SECONDS, gate.set)  # a broken timeout fails, never hangs
        safety.start()
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"^token accounting flush timed out$"):
            acct.flush_token_counts(timeout=0.2)
        elapsed = time.monotonic() - started
        safety.cancel()
        assert 0.15 < elapsed < BOUNDED
        assert acct.pending() == 1  # in flight, not lost
    acct.flush_token_counts(timeout=5)
    assert rows(acct.path)[0][2] == 1 and acct.pending() == 0


def kill_writer(accounting: TokenAccounting) -> None:
    """Let the writer exit as if it had died, without marking the instance stopped."""
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=0, api_calls=0)
    accounting.flush_token_counts()
    with accounting._cond:
        accounting._stopping = True
    accounting._wake()
    accounting._thread.join(5)
    assert not accounting._thread.is_alive()
    accounting._stopping = False


def test_s7_a_dead_writer_drained_under_a_held_lock_keeps_its_deltas(tmp_path):
    """S7: the caller's drain of a dead writer loses nothing to another process's lock."""
    accounting = TokenAccounting(make_db(tmp_path / "state.db"), lock_timeout=0.2)
    errors: list[Exception] = []
    accounting.on_error = errors.append
    try:
        kill_writer(accounting)
        with held_write_lock(accounting.path):
            for _ in range(3):
                accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
            with pytest.raises(StorageLockedError):
                accounting.flush_token_counts()
            assert accounting.pending() == 1  # three deltas, coalesced, back in the queue
            assert accounting.lock_blocked and len(errors) == 1
        accounting.flush_token_counts()
        assert rows(accounting.path)[0][2] == 3 and not accounting.lock_blocked
    finally:
        accounting.close()


def test_s6_close_drains_what_a_dead_writer_left(tmp_path):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    kill_writer(accounting)
    for _ in range(4):
        accounting.queue_token_counts("s1", model="m", provider="p", output_tokens=2)
    assert accounting.pending() == 4
    accounting.close()
    assert rows(path)[0][3] == 8


def test_s6_close_says_what_a_held_lock_kept_it_from_saving(tmp_path, caplog):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=0.1)
    kill_writer(accounting)
    for _ in range(2):
        accounting.queue_token_counts("s1", model="m", provider="p", output_tokens=2)
    with held_write_lock(path), pytest.raises(StorageLockedError):
        accounting.close(give_up_at=time.monotonic() + 0.2)
    assert accounting.lost == 1  # the two deltas went as one coalesced apply
    assert "1 delta(s) not saved" in caplog.text
    assert rows(path)[0][3] == 0
    with pytest.raises(StorageClosedError):
        accounting.update_token_counts("s1", model="m", provider="p")


def test_s6_a_delta_queued_as_the_writer_stops_is_applied_inline(acct):
    """The race in queue_token_counts: stop_writer() runs between its stopped check and its
    append. The delta must still land, on the caller's thread."""
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.flush_token_counts()
    race = acct._queue = _RacingQueue(acct)
    race.before_append = acct.stop_writer
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
    assert race.before_append is None and not acct._thread.is_alive()
    assert rows(acct.path)[0][2] == 11 and not acct._queue  # no flush: applied inline
    assert acct.idle  # and the drain let go of the busy flag


def test_s6_the_exit_drain_saves_what_a_dead_writer_left(tmp_path):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    accounting._atexit()  # what atexit runs at interpreter exit
    assert rows(path)[0][2] == 5
    accounting.close()


def test_s6_the_exit_drain_logs_a_lock_it_could_not_outwait(tmp_path, caplog):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=0.1)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    with held_write_lock(path):
        accounting._atexit()  # never raises at interpreter exit
    assert "drain at exit failed" in caplog.text and accounting.lost == 1
    with pytest.raises(StorageLockedError):
        accounting.close()  # and the owner, if it still closes, hears what was lost


class FailingConnection:
    """The accounting's sqlite3 connection, with COMMIT failing as a full or broken disk does."""

    def __init__(self, conn: sqlite3.Connection, error: sqlite3.Error | None) -> None:
        self._conn = conn
        self.error = error
        self.rollbacks = 0

    def execute(self, sql: str, *args):
        if sql == "COMMIT" and self.error is not None:
            raise self.error
        if sql == "ROLLBACK":
            self.rollbacks += 1
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (sqlite3.OperationalError("database or disk is full"), "is full; free some space"),
        (sqlite3.DatabaseError("database disk image is malformed"), "is corrupt"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "is read-only"),
    ],
)
def test_s7_a_failed_commit_is_rolled_back_reported_with_its_reason_and_survived(
    acct, error, reason
):
    errors: list[Exception] = []
    acct.on_error = errors.append
    failing = acct._conn = FailingConnection(acct._connection(), error)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    acct.flush_token_counts()  # not a lock error: nothing to raise, nothing requeued
    assert failing.rollbacks == 1 and not failing.in_transaction
    assert len(errors) == 1 and reason in str(errors[0]) and str(acct.path) in str(errors[0])
    assert not acct.lock_blocked and acct.pending() == 0
    assert rows(acct.path)[0][2] == 0
    failing.error = None  # the disk has room again: the writer kept going
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
    acct.flush_token_counts()
    assert rows(acct.path)[0][2] == 10 and acct._thread.is_alive() and len(errors) == 1


def test_s7_a_full_disk_during_closes_drain_is_reported_and_close_still_ends(tmp_path):
    """close() drains what a dead writer left onto a full disk: that is no lock to give up on,
    so it is reported once in the database's words and close() ends without raising."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    errors: list[Exception] = []
    accounting.on_error = errors.append
    kill_writer(accounting)
    full = sqlite3.OperationalError("database or disk is full")
    accounting._conn = FailingConnection(accounting._connection(), full)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    accounting.close()
    assert len(errors) == 1 and "is full; free some space" in str(errors[0])
    assert accounting.lost == 0 and rows(path)[0][2] == 0


def test_s7_a_delta_that_ends_the_transaction_fails_the_whole_batch(tmp_path):
    """SQLite rolls a whole transaction back on some errors (a full disk mid-statement):
    the other deltas must not be committed outside any transaction."""
    conn = sqlite3.connect(make_db(tmp_path / "state.db"), isolation_level=None)

    class EndsTheTransaction(FailingConnection):
        def execute(self, sql: str, *args):
            if sql.startswith("UPDATE sessions") and args[0]["input_tokens"] == 2:
                self._conn.execute("ROLLBACK")
                raise sqlite3.OperationalError("database or disk is full")
            return super().execute(sql, *args)

    wrapped = EndsTheTransaction(conn, None)
    wrapped.execute("BEGIN IMMEDIATE")
    with pytest.raises(StorageFullError):
        apply_in_transaction(wrapped, [d(input_tokens=1), d(input_tokens=2)], tmp_path)
    assert not conn.in_transaction and rows(conn)[0][2] == 0
    wrapped.execute("BEGIN IMMEDIATE")
    failed = apply_in_transaction(
        wrapped, [d(input_tokens=1), d(session_id="ghost"), d(input_tokens=4)], tmp_path
    )
    assert [(delta.session_id, type(err)) for delta, err in failed] == [
        ("ghost", UnknownSessionError)
    ]
    assert rows(conn)[0][2] == 5  # the others committed, each in its savepoint
    conn.close()


def test_s7_an_error_that_is_not_sqlites_rolls_back_and_propagates(tmp_path):
    conn = sqlite3.connect(make_db(tmp_path / "state.db"), isolation_level=None)

    class Interrupted(FailingConnection):
        def execute(self, sql: str, *args):
            if sql.startswith("INSERT INTO session_model_usage"):
                raise KeyboardInterrupt
            return super().execute(sql, *args)

    wrapped = Interrupted(conn, None)
    wrapped.execute("BEGIN IMMEDIATE")
    with pytest.raises(KeyboardInterrupt):
        apply_in_transaction(wrapped, [d(input_tokens=3)], tmp_path)
    assert wrapped.rollbacks == 1 and not conn.in_transaction
    assert rows(conn)[0][2] == 0
    conn.close()


def test_s2_missing_values_count_as_nothing_and_numbers_are_normalised():
    delta = make_delta(
        7, model=None, provider=None, route=None, input_tokens=None, output_tokens=None,
        cache_read_tokens=None, cache_write_tokens=None, reasoning_tokens=None, api_calls=None,
        estimated_cost_usd="0.25", actual_cost_usd=1, absolute=1,
    )  # fmt: skip
    assert delta == Delta("7", "", "", "", 0, 0, 0, 0, 0, 0, 0.25, 1.0, True)
    assert type(delta.actual_cost_usd) is float and delta.absolute is True
    counted = make_delta("s", model="m", provider="p", input_tokens="3", reasoning_tokens=2.0)
    assert (counted.input_tokens, counted.reasoning_tokens, counted.api_calls) == (3, 2, 1)
    assert make_delta("s", model="m", provider="p").estimated_cost_usd is None
    assert make_delta("s", model="m", provider="p").route == ""  # the default route


@pytest.mark.parametrize("bad", ["many", [1], float("inf")])
def test_s2_a_value_that_cannot_be_converted_is_dropped_alone(acct, caplog, bad):
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=bad)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=3)
    acct.flush_token_counts()
    assert rows(acct.path)[0][2] == 3 and "dropped a delta with bad values" in caplog.text


def refuse_large_counts(path: Path) -> None:
    """A trigger that fails one delta's UPDATE alone (the transaction stays open)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "CREATE TRIGGER too_many BEFORE UPDATE ON sessions WHEN NEW.input_tokens > 100"
        " BEGIN SELECT RAISE(ABORT, 'too many tokens'); END"
    )
    conn.close()


def test_s7_a_delta_that_fails_alone_raises_its_own_error_naming_the_database(acct):
    refuse_large_counts(acct.path)
    with pytest.raises(StorageError) as caught:
        acct.update_token_counts("s1", model="m", provider="p", input_tokens=500)
    assert str(caught.value) == (
        f"the session database {acct.path} failed: too many tokens"
    )  # fmt: skip
    acct.update_token_counts("s1", model="m", provider="p", input_tokens=5)
    assert rows(acct.path)[0][2] == 5


def test_s7_a_queued_delta_that_fails_alone_is_reported_and_the_rest_lands(tmp_path):
    path = make_db(tmp_path / "state.db")
    refuse_large_counts(path)
    reported: list[StorageError] = []
    accounting = TokenAccounting(path, on_error=reported.append)
    kill_writer(accounting)  # the deltas below go as one batch, drained by the flush
    accounting.queue_token_counts("s2", model="m", provider="p", input_tokens=500)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=7)
    accounting.flush_token_counts()
    assert [str(err) for err in reported] == [
        f"the session database {path} failed: too many tokens"
    ]
    assert rows(path)[0][2] == 7 and rows(path, "s2")[0][2] == 0
    accounting.close()


def test_s6_lost_counts_every_delta_dropped_not_only_the_last_drop(tmp_path):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=0.1)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    with held_write_lock(path), pytest.raises(StorageLockedError):
        accounting._drain_inline()  # a drain that outlasts nothing: what it held is lost
    assert accounting.lost == 1
    accounting.queue_token_counts("s2", model="m", provider="p", input_tokens=5)
    with held_write_lock(path), pytest.raises(StorageLockedError):
        accounting.close(give_up_at=time.monotonic() + 0.2)
    assert accounting.lost == 2


def test_s6_the_exit_drain_waits_a_bounded_time_for_a_busy_writer(tmp_path):
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=0.1)
    with gated(accounting) as gate:
        accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
        wait_until(lambda: accounting._busy, timeout=5)
        safety = threading.Timer(GATE_SECONDS, gate.set)  # an unbounded wait ends here
        safety.start()
        started = time.monotonic()
        accounting._atexit()  # the writer is stuck in its apply: the drain must not be
        elapsed = time.monotonic() - started
        safety.cancel()
    # One lock window and the slack (1.1 s): waited that long, not for ever, not at all.
    assert 1.0 < elapsed < BOUNDED
    accounting.close()
    assert rows(path)[0][2] == 5


def test_s6_after_the_writer_stopped_a_delta_that_fails_alone_raises_its_error(acct):
    refuse_large_counts(acct.path)
    acct.stop_writer()
    with pytest.raises(StorageError, match="too many tokens"):
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=500)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=5)  # applied inline
    assert rows(acct.path)[0][2] == 5


def test_the_writer_is_one_named_daemon_thread_even_for_racing_first_calls(acct):
    """Two first queue calls that both saw no writer start one between them; a daemon, so
    it never holds the interpreter's exit (the exit drain saves what it had)."""
    both_checked = threading.Barrier(2, timeout=5)
    real = acct._cond

    class MeetFirst:
        """The first two entries of the writer's lock wait for each other: both queue
        calls have made their lock-free check by then."""

        entries = 0

        def __enter__(self):
            MeetFirst.entries += 1
            if MeetFirst.entries <= 2:
                both_checked.wait()
            return real.__enter__()

        def __exit__(self, *exc):
            return real.__exit__(*exc)

        def __getattr__(self, name):
            return getattr(real, name)

    before = set(threading.enumerate())
    acct._cond = MeetFirst()
    callers = [
        threading.Thread(
            target=acct.queue_token_counts, args=("s1",), kwargs=dict(model="m", provider="p")
        )
        for _ in range(2)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(5)
    acct._cond = real
    writers = [t for t in set(threading.enumerate()) - before if t not in callers]
    assert writers == [acct._thread] and writers[0].daemon
    assert writers[0].name == "hermes-token-accounting"
    acct.flush_token_counts()
    assert rows(acct.path)[0][7] == 2


def test_s6_the_exit_wait_is_announced_only_while_stopping(tmp_path):
    """on_exit_wait says "waiting for another process" once close() waits on a lock, and
    never for the ordinary lock retries of a running writer."""
    path = make_db(tmp_path / "state.db")
    announced: list[bool] = []
    accounting = TokenAccounting(
        path, lock_timeout=0.05, on_exit_wait=lambda: announced.append(accounting._stopping)
    )
    with held_write_lock(path):
        accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        wait_until(lambda: accounting._lock_error is not None, timeout=5)
        first = accounting._lock_error
        wait_until(lambda: accounting._lock_error is not first, timeout=5)  # a second window
        assert announced == []  # retrying while running: nothing to announce
        with pytest.raises(StorageLockedError):
            accounting.close(give_up_at=time.monotonic() + 0.3)
    assert announced and all(announced)


def test_s6_the_exit_wait_cuts_the_lock_window_short(tmp_path):
    """close(give_up_at) bounds the drain's lock window, however long lock_timeout is."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=GATE_SECONDS)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    started = time.monotonic()
    with held_write_lock(path), pytest.raises(StorageLockedError) as caught:
        accounting.close(give_up_at=time.monotonic() + 0.2)
    assert time.monotonic() - started < BOUNDED  # the minute's window would take it all
    assert str(path) in str(caught.value) and accounting.lost == 1


class BeginFails(FailingConnection):
    """BEGIN IMMEDIATE fails with an error that is not another process's lock."""

    def execute(self, sql: str, *args):
        if sql == "BEGIN IMMEDIATE":
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)


def test_s7_a_begin_that_fails_is_the_error_in_the_databases_words(acct):
    acct._conn = BeginFails(acct._connection(), None)
    with pytest.raises(StorageError) as caught:
        acct.update_token_counts("s1", model="m", provider="p", input_tokens=1)
    assert str(caught.value) == f"the session database {acct.path} failed: disk I/O error"


def test_s7_a_database_that_cannot_be_opened_or_is_closed_says_which(tmp_path):
    path = tmp_path / "no-such-dir" / "state.db"
    accounting = TokenAccounting(path)
    with pytest.raises(StorageError) as caught:
        accounting.update_token_counts("s1", model="m", provider="p")
    assert str(caught.value).startswith(f"the session database {path} cannot be opened")
    accounting.close()
    with pytest.raises(StorageClosedError) as closed:
        accounting.update_token_counts("s1", model="m", provider="p")
    assert str(closed.value) == f"the session database {path} is closed"


def test_s6_close_without_an_exit_wait_still_waits_one_lock_window(tmp_path):
    """close() with no give_up_at retries a held lock for one lock window, then saves."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=3)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    with held_write_lock(path) as release:
        # The other process lets go well inside the window (which a past give-up would cut).
        letting_go = threading.Timer(0.2, release.set)
        letting_go.start()
        accounting.close()
        letting_go.cancel()
    assert rows(path)[0][2] == 5 and accounting.lost == 0


def test_s6_a_stop_during_a_lock_wait_still_waits_one_window_from_the_stop(tmp_path):
    """close() without give_up_at lands while the writer already waits on a held lock: the
    exit wait is one lock window from the stop, not what is left of the writer's window, so
    the retry after it saves the delta once the other process lets go."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path, lock_timeout=1.0)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    accounting.flush_token_counts()  # the writer is running
    real, calls, outcome = accounting._apply_batch, [], []

    def close():
        try:
            accounting.close()
            outcome.append(None)
        except StorageError as exc:
            outcome.append(exc)

    closer = threading.Timer(0.3, close)  # well inside the first window
    with held_write_lock(path) as release:

        def applying(deltas):
            calls.append(len(deltas))
            if len(calls) == 1:
                closer.start()
            else:
                release.set()  # the other process lets go before the retry
            return real(deltas)

        accounting._apply_batch = applying
        accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
        wait_until(lambda: outcome, timeout=10, what="close() to return")
    closer.join(5)
    assert outcome == [None] and calls == [1, 1]
    assert rows(path)[0][2] == 6 and accounting.lost == 0


def test_s6_stop_writer_waits_for_a_stuck_writer_only_as_long_as_told(acct):
    with gated(acct):
        acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
        wait_until(lambda: acct._busy, timeout=5)
        started = time.monotonic()
        acct.stop_writer(timeout=0.2)  # the gate holds the writer for a minute
        assert time.monotonic() - started < BOUNDED and acct._thread.is_alive()
    acct._thread.join(5)
    assert rows(acct.path)[0][2] == 1  # it still drained before exiting


def test_s6_a_flush_during_closes_drain_waits_for_it(tmp_path):
    """close()'s drain claims the busy flag: a flush meanwhile reads what it wrote."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    kill_writer(accounting)
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
    applying, gate, flusher_waits = threading.Event(), threading.Event(), threading.Event()
    real_apply, real_cond = accounting._apply_batch, accounting._cond

    def held_apply(deltas):
        applying.set()
        gate.wait(5)
        return real_apply(deltas)

    class Watched:
        """The condition, telling when a thread other than close()'s starts waiting."""

        def __enter__(self):
            return real_cond.__enter__()

        def __exit__(self, *exc):
            return real_cond.__exit__(*exc)

        def wait(self, timeout=None):
            if threading.current_thread() is flusher:
                flusher_waits.set()
            return real_cond.wait(timeout)

        def __getattr__(self, name):
            return getattr(real_cond, name)

    accounting._apply_batch, accounting._cond = held_apply, Watched()
    closer = threading.Thread(target=accounting.close)
    closer.start()
    assert applying.wait(5)
    seen: list[int] = []
    flusher = threading.Thread(
        target=lambda: (accounting.flush_token_counts(), seen.append(rows(path)[0][2]))
    )
    flusher.start()
    wait_until(lambda: flusher_waits.is_set() or not flusher.is_alive(), timeout=5)
    gate.set()
    for thread in (closer, flusher):
        thread.join(5)
    assert seen == [5]


def test_s4_a_delta_queued_during_a_flushs_drain_is_no_error(tmp_path):
    """A flush that drained a dead writer returns quietly when more was queued meanwhile
    (only a lock that won meanwhile raises)."""
    path = make_db(tmp_path / "state.db")
    accounting = TokenAccounting(path)
    kill_writer(accounting)
    real_apply = accounting._apply_batch

    def apply_and_queue_more(deltas):
        accounting._apply_batch = real_apply
        accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=2)
        return real_apply(deltas)

    accounting._apply_batch = apply_and_queue_more
    accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    accounting.flush_token_counts()  # drains the 1; the 2 came after it started
    assert rows(path)[0][2] == 1 and accounting.pending() == 1
    accounting.close()
    assert rows(path)[0][2] == 3


def test_s6_a_stopping_writer_retries_the_lock_until_the_exit_wait_ends(tmp_path):
    """With an exit wait longer than one lock window, the writer keeps trying: here the
    other process lets go when the writer announces its wait, and nothing is lost."""
    path = make_db(tmp_path / "state.db")
    with held_write_lock(path) as release:
        accounting = TokenAccounting(path, lock_timeout=0.1, on_exit_wait=release.set)
        accounting.queue_token_counts("s1", model="m", provider="p", input_tokens=5)
        wait_until(lambda: accounting.lock_blocked, timeout=5)
        accounting.close(give_up_at=time.monotonic() + 10)
    assert rows(path)[0][2] == 5 and accounting.lost == 0


def test_s7_an_unexpected_failure_while_stopping_drops_only_its_own_batch(acct, caplog):
    """A batch that fails for no storage reason is lost alone: the stopping writer still
    applies what was queued behind it, even past the exit wait (no lock held it up)."""
    gate = threading.Event()
    real_apply = acct._apply_batch

    def fails_once(deltas):
        acct._apply_batch = real_apply
        gate.wait(5)
        raise RuntimeError("a bug")

    acct._apply_batch = fails_once
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=1)
    wait_until(lambda: acct._busy, timeout=5)
    acct.queue_token_counts("s1", model="m", provider="p", input_tokens=10)
    acct.stop_writer(timeout=0, give_up_at=time.monotonic())
    gate.set()
    acct._thread.join(5)
    assert rows(acct.path)[0][2] == 10 and acct.lost == 0
    assert "unexpected failure" in caplog.text
