"""storage/aiosqlite_compat.py's touch of aiosqlite's internals still holds (#28 item 3).

A failure here names the compat function an aiosqlite upgrade broke; the rest of the code
reaches aiosqlite's internals only through it (test_compat_seams.py).
"""

from __future__ import annotations

import sqlite3
import threading

import aiosqlite

from storage.aiosqlite_compat import daemon_worker


async def test_daemon_worker_makes_the_connections_worker_a_daemon(tmp_path):
    before = set(threading.enumerate())
    pending = aiosqlite.Connection(lambda: sqlite3.connect(tmp_path / "a.db"), iter_chunk_size=64)
    daemon_worker(pending)
    conn = await pending
    try:
        started = set(threading.enumerate()) - before
        assert started and all(thread.daemon for thread in started), (
            "aiosqlite's worker thread is not the one daemon_worker changed: fix "
            "aiosqlite_compat.daemon_worker"
        )
        assert await (await conn.execute("select 1")).fetchone() == (1,)
    finally:
        await conn.close()
