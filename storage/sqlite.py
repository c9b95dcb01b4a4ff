"""Connecting to the session database: private files, one set of pragmas, the lock retry.

Every connection to `state.db` (the store's aiosqlite connection, the token accounting's
sqlite3 connection, the search-index rebuild's) is opened by `connect` here, so they share
durability (synchronous=FULL), foreign keys and the short busy timeout. Writes start with
`BEGIN IMMEDIATE` under one jittered retry, in a blocking and an async form.
"""

from __future__ import annotations

import asyncio
import functools
import random
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from .aiosqlite_compat import daemon_worker
from .errors import StorageLockedError, is_busy
from .files import private_dir, private_file, tighten_if_present

# Short, so one attempt never parks a connection's thread for long; the jittered retry loop
# above it owns the real waiting and can give up with a clear message.
BUSY_TIMEOUT_MS = 50

CONNECTION_PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA foreign_keys = ON",
    # FULL (SQLite's default): a commit survives power loss and OS crashes too, not only a
    # killed process, at one WAL fsync per commit. A turn commits a handful of times; the
    # per-model-call token accounting goes through a queue, so the agent loop never waits
    # for that fsync (SPEC S2, S8).
    "PRAGMA synchronous = FULL",
)
"""Per-connection settings every connection to the database gets."""

DEFAULT_LOCK_TIMEOUT = 5.0
"""Seconds a write retries BEGIN IMMEDIATE while another process holds the lock."""

_FIRST_DELAY = 0.01
_MAX_DELAY = 0.2

_T = TypeVar("_T")


def prepare_private_file(path: Path) -> None:
    """Create the database's folder (0700) and file (0600) before SQLite opens it (SPEC H5).

    SQLite creates its -wal and -shm files with the database file's mode, so a 0600 file
    made here keeps all three private; ones left by an older run are tightened.
    """
    private_dir(path.parent)
    private_file(path)
    for suffix in ("-wal", "-shm"):
        tighten_if_present(f"{path}{suffix}")


def connect(path: Path) -> sqlite3.Connection:
    """A sqlite3 connection in autocommit mode (transactions are explicit), pragmas applied.

    Usable from any one thread at a time (callers serialise it themselves).
    """
    conn = _open(path)
    try:
        for pragma in CONNECTION_PRAGMAS:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return conn


async def connect_async(path: Path) -> aiosqlite.Connection:
    """The same connection as `connect`, behind aiosqlite's worker thread, rows by name."""
    pending = aiosqlite.Connection(functools.partial(_open, path), iter_chunk_size=64)
    # A daemon worker: a process that dies before close() (a crash, a failed test) still
    # exits instead of waiting forever on an idle connection thread. Every commit is already
    # durable (synchronous=FULL); nothing is lost by not joining it.
    daemon_worker(pending)
    conn = await pending
    conn.row_factory = aiosqlite.Row
    try:
        # Applied once connected, not by the opener: a file that is no database fails here,
        # and close() then stops the worker thread properly (a failed opener leaves aiosqlite
        # to stop it without waiting).
        for pragma in CONNECTION_PRAGMAS:
            await conn.execute(pragma)
    except BaseException:
        await conn.close()
        raise
    return conn


def _open(path: Path) -> sqlite3.Connection:
    # Opening reads nothing of the file yet; the first statement does.
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


class LockWindow:
    """How long a write keeps retrying a lock another connection holds, and how often.

    The window is `lock_timeout` seconds, cut short by `give_up_at` (a time.monotonic()
    value: the exit wait's end). Pauses grow from 5-10 ms to at most 100-200 ms, jittered so
    two waiting processes do not retry in lockstep.
    """

    def __init__(self, path: Path, lock_timeout: float, give_up_at: float | None = None) -> None:
        self.path = path
        self.started = time.monotonic()
        self.waited = False
        """Set at the first lock error: from then on the write waits for another process."""
        self.deadline = self.started + lock_timeout
        if give_up_at is not None:
            self.deadline = min(self.deadline, give_up_at)
        self._delay = _FIRST_DELAY

    def pause_after(self, exc: sqlite3.OperationalError) -> float:
        """Seconds to sleep before the next attempt; re-raises exc when it is no lock error,
        and raises StorageLockedError once the window has passed."""
        if not is_busy(exc):
            raise exc
        self.waited = True
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise StorageLockedError(self.path) from exc
        pause = min(remaining, random.uniform(self._delay / 2, self._delay))
        self._delay = min(self._delay * 2, _MAX_DELAY)
        return pause


def begin_immediate(conn: sqlite3.Connection, window: LockWindow) -> None:
    """BEGIN IMMEDIATE on a blocking connection, retried while another one holds the lock."""
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            time.sleep(window.pause_after(exc))


async def retry_locked(attempt: Callable[[], Awaitable[_T]], window: LockWindow) -> _T:
    """Await attempt(), again after a pause each time the database is locked by another."""
    while True:
        try:
            return await attempt()
        except sqlite3.OperationalError as exc:
            await asyncio.sleep(window.pause_after(exc))
