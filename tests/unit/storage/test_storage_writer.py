"""The queued writer: cross-thread enqueues, ordering, flush, close drain, failure isolation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from storage import SessionDB, StorageFullError, UnknownSessionError


async def test_enqueue_from_many_threads_keeps_per_thread_order(db, session):
    sid = session["id"]
    threads, per_thread = 8, 50
    start = threading.Barrier(threads)

    def worker(t: int) -> list[concurrent.futures.Future]:
        start.wait()
        return [
            db.enqueue_message(sid, {"role": "user", "content": f"t{t} m{i}"})
            for i in range(per_thread)
        ]

    loop = asyncio.get_running_loop()
    # Own pool: the default executor may have fewer workers than the barrier needs.
    with concurrent.futures.ThreadPoolExecutor(max_workers=threads) as pool:
        batches = await asyncio.gather(
            *(loop.run_in_executor(pool, worker, t) for t in range(threads))
        )
    ids = await asyncio.gather(*(asyncio.wrap_future(f) for fs in batches for f in fs))
    assert len(set(ids)) == threads * per_thread

    loaded = await db.load_messages(sid)
    assert len(loaded) == threads * per_thread
    assert [m["seq"] for m in loaded] == list(range(1, threads * per_thread + 1))
    by_id = {m["id"]: m for m in loaded}
    for t, futures in enumerate(batches):
        mine = [by_id[f.result()] for f in futures]
        assert [m["content"] for m in mine] == [f"t{t} m{i}" for i in range(per_thread)]
        seqs = [m["seq"] for m in mine]
        assert seqs == sorted(seqs)


async def test_flush_gives_read_your_writes(db, session):
    sid = session["id"]
    futures = [db.enqueue_message(sid, {"role": "user", "content": str(i)}) for i in range(20)]
    db.queue_token_counts(sid, model="m", provider="p", input_tokens=3, estimated_cost_usd=0.5)
    db.enqueue_session_update(sid, title="renamed", last_activity_at=123.0)
    await db.flush()
    assert all(f.done() for f in futures)
    assert [m["content"] for m in await db.load_messages(sid)] == [str(i) for i in range(20)]
    s = await db.get_session(sid)
    assert (s["title"], s["last_activity_at"], s["input_tokens"]) == ("renamed", 123.0, 3)
    assert s["estimated_cost_usd"] == 0.5
    # Idle flush is the fast path: no barrier, no task switch needed.
    assert db._writer.idle
    await db.flush()
    db.flush_token_counts()


async def test_writes_are_batched_into_one_transaction(db, session):
    commits = 0
    real_execute = db._conn.execute

    async def counting(sql, params=()):
        nonlocal commits
        commits += sql == "COMMIT"
        return await real_execute(sql, params)

    db._conn.execute = counting
    for i in range(30):
        db.enqueue_message(session["id"], {"role": "user", "content": str(i)})
    await db.flush()
    assert commits == 1


async def test_flush_threadsafe_and_call_from_worker_thread(db, session):
    sid = session["id"]

    def agent_thread() -> list[dict]:
        for i in range(10):
            db.enqueue_message(sid, {"role": "assistant", "content": f"answer {i}"})
        db.flush_threadsafe()
        return db.call(db.load_messages, sid)

    loaded = await asyncio.to_thread(agent_thread)
    assert [m["content"] for m in loaded] == [f"answer {i}" for i in range(10)]


async def test_blocking_helpers_refuse_the_loop_thread(db):
    with pytest.raises(RuntimeError):
        db.flush_threadsafe()
    with pytest.raises(RuntimeError):
        db.call(db.list_sessions)


async def test_close_drains_pending_enqueues(tmp_path):
    path = tmp_path / "state.db"
    db = await SessionDB.open(path)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    futures = [db.enqueue_message(sid, {"role": "user", "content": str(i)}) for i in range(100)]
    db.queue_token_counts(sid, model="m", provider="p", output_tokens=9)
    await db.close()
    assert all(f.done() and f.exception() is None for f in futures)

    db = await SessionDB.open(path)
    assert len(await db.load_messages(sid)) == 100
    assert (await db.get_session(sid))["output_tokens"] == 9
    await db.close()


async def test_close_drains_writes_enqueued_from_a_thread(tmp_path):
    path = tmp_path / "state.db"
    db = await SessionDB.open(path)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    enqueued = threading.Event()

    def worker():
        f = db.enqueue_message(sid, {"role": "user", "content": "from thread"})
        enqueued.set()
        return f

    fut = await asyncio.to_thread(worker)
    assert enqueued.is_set()
    await db.close()
    assert isinstance(fut.result(), int)


async def test_writer_failure_fails_only_that_future(db, session):
    sid = session["id"]
    errors: list[str] = []
    db.on_write_error = errors.append
    before = db.enqueue_message(sid, {"role": "user", "content": "before"})
    bad = db.enqueue_message("no-such-session", {"role": "user", "content": "lost"})
    after = db.enqueue_message(sid, {"role": "user", "content": "after"})
    await db.flush()
    assert isinstance(bad.exception(), UnknownSessionError)
    assert "no-such-session" in db.last_write_error and "does not exist" in db.last_write_error
    assert errors == [db.last_write_error]
    assert before.exception() is None and after.exception() is None
    # The writer keeps going.
    later = db.enqueue_message(sid, {"role": "user", "content": "later"})
    await db.flush()
    assert later.exception() is None
    assert [m["content"] for m in await db.load_messages(sid)] == ["before", "after", "later"]
    assert [m["seq"] for m in await db.load_messages(sid)] == [1, 2, 3]


async def test_bad_rows_fail_their_future_without_raising(db, session):
    assert isinstance(
        db.enqueue_message(session["id"], {"content": "no role"}).exception(), ValueError
    )
    fut = db.enqueue_session_update(session["id"], bogus=1)
    assert isinstance(fut.exception(), ValueError)
    with pytest.raises(TypeError):
        db.queue_token_counts(session["id"], model="m", provider="p", tokens=1)


async def test_disk_full_is_reported_and_later_writes_land(db, session):
    sid = session["id"]
    await db.add_message(sid, {"role": "user", "content": "small"})
    async with db._conn.execute("PRAGMA page_count") as cur:
        pages = (await cur.fetchone())[0]
    # A page cap is a real SQLITE_FULL without filling the test machine's disk.
    await db._conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    ok = db.enqueue_message(sid, {"role": "user", "content": "fits"})
    huge = db.enqueue_message(sid, {"role": "user", "content": "x" * 200_000})
    await db.flush()
    assert isinstance(huge.exception(), StorageFullError)
    assert "is full" in db.last_write_error
    await db._conn.execute("PRAGMA max_page_count = 1073741823")
    assert ok.exception() is None
    again = db.enqueue_message(sid, {"role": "user", "content": "after space freed"})
    await db.flush()
    assert again.exception() is None
    contents = [m["content"] for m in await db.load_messages(sid)]
    assert contents == ["small", "fits", "after space freed"]


def test_enqueue_after_owning_loop_stopped_fails_the_future(tmp_path):
    db = asyncio.run(SessionDB.open(tmp_path / "state.db"))
    try:
        fut = db.enqueue_message("x", {"role": "user", "content": "orphan"})
        assert "closed" in str(fut.exception())
        assert db._writer.idle  # nothing parked on a queue no one will drain
    finally:
        asyncio.run(db._conn.close())


def test_storage_imports_no_ui_or_agent_code():
    import subprocess
    import sys

    code = (
        "import sys, storage, storage.db, storage.writer, storage.schema, storage.errors,"
        " storage.accounting;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'hermes_tui', 'agent')];"
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="."
    )
    assert out.stdout.strip() == "[]"
