"""SessionDB against other processes: a kill -9 mid-turn, and a second process holding the lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from storage import SessionDB, StorageLockedError

ROOT = Path(__file__).resolve().parents[2]

# A fake turn: the agent thread enqueues each message as it completes and flushes at the
# points the agent would; the process then dies by SIGKILL while a write is still queued.
_CRASHING_TURN = textwrap.dedent(
    """
    import asyncio, os, signal, sys, threading
    from storage import SessionDB

    async def main(path):
        db = await SessionDB.open(path)
        s = await db.create_session(model="m", provider="p", workspace="/w", session_id="crash1")

        def agent_thread():
            db.enqueue_message("crash1", {"role": "user", "content": "fix the bug"})
            db.enqueue_message("crash1", {"role": "assistant", "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "read_file", "arguments": "{}"}}]})
            db.enqueue_message("crash1", {"role": "tool", "content": "file body",
                                          "tool_call_id": "c1", "name": "read_file"})
            db.queue_token_counts("crash1", model="m", provider="p", input_tokens=100)
            db.flush_threadsafe()
            print("persisted", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        await asyncio.to_thread(agent_thread)

    asyncio.run(main(sys.argv[1]))
    """
)

_LOCK_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("held", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    """
)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def test_kill_9_mid_turn_keeps_completed_messages(tmp_path):
    path = tmp_path / "state.db"
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_TURN, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert "persisted" in proc.stdout

    db = await SessionDB.open(path)
    messages = await db.load_messages("crash1")
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["id"] == "c1"
    assert (await db.get_session("crash1"))["input_tokens"] == 100
    # The session resumes: new writes append after the recovered ones.
    await db.add_message("crash1", {"role": "user", "content": "continue"})
    assert [m["seq"] for m in await db.load_messages("crash1")] == [1, 2, 3, 4]
    await db.close()


async def test_lock_held_by_another_process(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db", lock_timeout=0.3)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(db.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        fut = db.enqueue_message(sid, {"role": "user", "content": "waiting"})
        with pytest.raises(StorageLockedError, match="another hermes-tui"):
            await db.flush()
        assert not fut.done()
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    await db.flush()
    assert isinstance(fut.result(), int)
    assert [m["content"] for m in await db.load_messages(sid)] == ["waiting"]
    await db.close()
