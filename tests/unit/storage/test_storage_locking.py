"""A database write-locked by another connection: jittered retry, then a clear error."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
import time

import pytest
from helpers import held_write_lock

from storage import SessionDB, StorageLockedError, StorageNotSavedError

LOCKED_MESSAGE = "is locked by another process (another hermes-tui?); close it and retry"


def exit_wait_said(sentence: str, path, what: str) -> bool:
    """True when `sentence` is the exit wait's announcement for `what` queued in `path`."""
    pattern = rf"waiting up to \d+ s for the database lock on {re.escape(str(path))} to clear"
    return re.fullmatch(pattern + rf" to save {re.escape(what)}", sentence) is not None


async def test_writes_retry_and_land_once_the_lock_is_released(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=10)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    with held_write_lock(db.path) as release:
        fut = db.enqueue_message(sid, {"role": "user", "content": "queued while locked"})
        # Release from the loop once the writer is demonstrably stuck behind the lock.
        asyncio.get_running_loop().call_later(0.3, release.set)
        await db.flush()
        direct = await db.add_message(sid, {"role": "user", "content": "direct"})
    assert isinstance(fut.result(), int) and direct > fut.result()
    assert db.last_write_error is None
    assert [m["content"] for m in await db.load_messages(sid)] == ["queued while locked", "direct"]
    await db.close()


async def test_lock_held_past_window_raises_clear_error_and_loses_nothing(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.3)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    with held_write_lock(db.path):
        futures = [db.enqueue_message(sid, {"role": "user", "content": f"m{i}"}) for i in range(3)]
        with pytest.raises(StorageLockedError) as info:
            await db.flush()
        assert LOCKED_MESSAGE in str(info.value) and str(db.path) in str(info.value)
        assert db.last_write_error == str(info.value)
        assert not any(f.done() for f in futures)  # still queued, not dropped
        with pytest.raises(StorageLockedError, match="close it and retry"):
            await db.add_message(sid, {"role": "user", "content": "direct"})
        futures.append(db.enqueue_message(sid, {"role": "user", "content": "m3"}))
    await db.flush()
    ids = [f.result() for f in futures]
    loaded = await db.load_messages(sid)
    assert [m["content"] for m in loaded] == ["m0", "m1", "m2", "m3"]
    assert [m["id"] for m in loaded] == ids
    await db.close()


async def test_close_while_locked_past_the_exit_wait_says_what_was_not_saved(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.1, exit_wait=0.4)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    told: list[str] = []
    with held_write_lock(db.path):
        fut = db.enqueue_message(sid, {"role": "user", "content": "unsaved"})
        db.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
        started = time.monotonic()
        with pytest.raises(StorageNotSavedError) as info:
            await db.close(on_wait=told.append)
        waited = time.monotonic() - started
    # The other process holds the lock for a minute (held_write_lock): an unbounded close
    # would wait it out; a quarter of it leaves a loaded machine room.
    assert 0.3 < waited < 15, "the exit wait is bounded by exit_wait"
    assert str(info.value).startswith("not saved: 1 message and token counts;")
    assert "still locked by another process" in str(info.value)
    assert len(told) == 1 and exit_wait_said(told[0], db.path, "1 message and token counts")
    assert isinstance(fut.exception(), StorageLockedError)


async def test_close_keeps_retrying_until_the_lock_clears_within_the_exit_wait(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.1, exit_wait=20)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    told: list[str] = []
    with held_write_lock(db.path) as release:
        futures = [db.enqueue_message(sid, {"role": "user", "content": f"m{i}"}) for i in range(3)]
        with pytest.raises(StorageLockedError):
            await db.flush()  # one lock window has passed: the writes wait behind the lock
        assert db.waiting_for_lock and db.describe_pending() == "3 messages"

        def release_once_told(sentence: str) -> None:
            told.append(sentence)
            release.set()

        await db.close(on_wait=release_once_told)
    assert len(told) == 1 and exit_wait_said(told[0], db.path, "3 messages")
    assert all(isinstance(f.result(), int) for f in futures)
    reopened = await SessionDB.open(db.path)
    assert [m["content"] for m in await reopened.load_messages(sid)] == ["m0", "m1", "m2"]
    await reopened.close()


async def test_writes_outlive_many_lock_windows_while_open(tmp_path):
    # Not one window, not a few: a lock held 20 windows long loses nothing, in order.
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.05)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    with held_write_lock(db.path) as release:
        futures = [db.enqueue_message(sid, {"role": "user", "content": f"m{i}"}) for i in range(3)]
        for _ in range(20):
            with pytest.raises(StorageLockedError):
                await db.flush()
            futures.append(db.enqueue_message(sid, {"role": "user", "content": "more"}))
        release.set()
    await db.flush()
    assert not db.waiting_for_lock
    contents = [m["content"] for m in await db.load_messages(sid)]
    assert contents == ["m0", "m1", "m2"] + ["more"] * 20
    assert [m["id"] for m in await db.load_messages(sid)] == [f.result() for f in futures]
    await db.close()


async def test_open_waits_for_a_migration_lock(tmp_path):
    path = tmp_path / "state.db"
    sqlite3.connect(path).close()
    with held_write_lock(path), pytest.raises(StorageLockedError):
        await SessionDB.open(path, lock_timeout=0.2)
    db = await SessionDB.open(path)
    assert await db.list_sessions() == []
    await db.close()


async def test_token_deltas_survive_a_lock_held_past_the_window(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.2)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    with held_write_lock(db.path):
        for _ in range(5):
            db.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
        with pytest.raises(StorageLockedError, match="close it and retry"):
            await asyncio.to_thread(db.flush_token_counts)
        assert LOCKED_MESSAGE in db.last_write_error
        db.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
    await db.flush()
    assert (await db.get_session(sid))["input_tokens"] == 6  # nothing lost
    await db.close()


async def test_a_flush_that_raises_the_lock_error_finds_it_already_recorded(tmp_path):
    # The race behind a once-flaky test: the writer woke the waiting flushers before it
    # recorded the error, so a flusher could raise while last_write_error was still None.
    # The error callback here holds the writer until the flush has raised (or 1 s passes),
    # which makes the old order fail every time and costs the right order one second.
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.2)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    raised = threading.Event()
    record = db.accounting.on_error

    def slow_record(err):
        raised.wait(1.0)
        record(err)

    db.accounting.on_error = slow_record
    seen: list[str | None] = []

    def flush():
        try:
            db.flush_token_counts()
        except StorageLockedError:
            seen.append(db.last_write_error)
            raised.set()
            raise

    with held_write_lock(db.path):
        db.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
        with pytest.raises(StorageLockedError):
            await asyncio.to_thread(flush)
    assert seen and seen[0] is not None and LOCKED_MESSAGE in seen[0]
    await db.flush()
    assert (await db.get_session(sid))["input_tokens"] == 1
    await db.close()
