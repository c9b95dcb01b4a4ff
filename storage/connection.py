"""The session store's one aiosqlite connection: reads, one-transaction writes, index repair.

Every statement of the store goes through here, so there is one place that turns sqlite3
errors into StorageErrors, one asyncio lock that keeps coroutines from interleaving inside a
transaction, and one place that knows the search index can be rebuilt when a write trips
over it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from .aiosqlite_compat import PendingCursor
from .errors import StorageClosedError, StorageError, StorageIndexCorruptError, translate
from .search_index import rebuild_search_index
from .sqlite import LockWindow, connect_async, retry_locked

log = logging.getLogger("hermes_tui.storage")

_T = TypeVar("_T")
Params = tuple[Any, ...] | dict[str, Any]


class StoreConnection:
    """The aiosqlite connection of one SessionDB and the rules every statement follows."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        # While close() waits for a held lock: no lock window reaches past this
        # time.monotonic() value.
        self.give_up_at: float | None = None
        # One connection: concurrent coroutines must not interleave inside a transaction.
        self.write_lock = asyncio.Lock()
        self.closed = False
        self._conn = conn
        self._index_repaired = False
        self._windows: set[LockWindow] = set()
        """The lock windows of the writes retrying now (read from any thread)."""

    # ------------------------------------------------------------------ statements

    def execute(self, sql: str, params: Params = ()) -> PendingCursor:
        """Run one statement: await it for the cursor, or `async with` it to read rows."""
        return self._conn.execute(sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> aiosqlite.Row | None:
        """One row of a read, or None; sqlite3 errors (a corrupt file) as StorageErrors."""
        self.check_open()
        try:
            async with self._conn.execute(sql, params) as cur:
                return await cur.fetchone()
        except sqlite3.Error as exc:
            raise self.translate(exc) from exc

    async def fetchall(self, sql: str, params: Params = ()) -> Iterable[aiosqlite.Row]:
        """Every row of a read; sqlite3 errors (a corrupt file) as StorageErrors."""
        self.check_open()
        try:
            async with self._conn.execute(sql, params) as cur:
                return await cur.fetchall()
        except sqlite3.Error as exc:
            raise self.translate(exc) from exc

    @property
    def in_transaction(self) -> bool:
        """True between a BEGIN and its COMMIT or ROLLBACK."""
        return self._conn.in_transaction

    def check_open(self) -> None:
        """Raise StorageClosedError once the store is closed."""
        if self.closed:
            raise StorageClosedError(self.path)

    def translate(self, exc: BaseException) -> StorageError:
        """exc as the StorageError that explains it to a user."""
        return translate(exc, self.path)

    # ------------------------------------------------------------------ transactions

    async def retry_locked(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Await attempt(), retried with jitter while another process holds the lock."""
        window = LockWindow(self.path, self.lock_timeout, self.give_up_at)
        self._windows.add(window)
        try:
            return await retry_locked(attempt, window)
        finally:
            self._windows.discard(window)

    @property
    def lock_wait_seconds(self) -> float | None:
        """How long a write has been waiting for another process's lock now (None: none is)."""
        waiting = [w.started for w in tuple(self._windows) if w.waited]
        return time.monotonic() - min(waiting) if waiting else None

    async def begin_immediate(self) -> None:
        """Take the write lock of the file (retried for one window); after close() refused."""
        self.check_open()
        await self.retry_locked(lambda: self.execute("BEGIN IMMEDIATE"))

    async def rollback_quietly(self) -> None:
        """Roll back an open transaction; a failed rollback is only logged."""
        try:
            if self._conn.in_transaction:
                await self.execute("ROLLBACK")
        except sqlite3.Error:
            log.debug("rollback failed", exc_info=True)

    async def write(self, fn: Callable[[], Awaitable[_T]]) -> _T:
        """Run fn inside one BEGIN IMMEDIATE transaction; sqlite errors become StorageErrors.

        A write that a damaged search index refuses is applied again once the index is
        rebuilt (once per open database).
        """
        async with self.write_lock:
            try:
                return await self._write_once(fn)
            except StorageIndexCorruptError as exc:
                if not self.may_repair_index():
                    raise
                await self.repair_index(exc)
                return await self._write_once(fn)

    async def _write_once(self, fn: Callable[[], Awaitable[_T]]) -> _T:
        try:
            await self.begin_immediate()
        except sqlite3.Error as exc:
            raise self.translate(exc) from exc
        try:
            result = await fn()
            await self.execute("COMMIT")
        except BaseException as exc:
            await self.rollback_quietly()
            if isinstance(exc, sqlite3.Error):
                raise self.translate(exc) from exc
            raise
        return result

    # ------------------------------------------------------------------ the search index

    def may_repair_index(self) -> bool:
        """True until the index was rebuilt once: an index that breaks again is reported."""
        return not self._index_repaired

    async def repair_index(self, cause: StorageError) -> None:
        """Rebuild the damaged search index (the caller holds write_lock, outside a
        transaction); a failed rebuild is logged, and the write that needed it fails."""
        self._index_repaired = True
        log.warning("%s; rebuilding it from the messages", cause)
        try:
            rows = await self.rebuild_index()
        except StorageError as exc:
            log.warning("the search index could not be rebuilt: %s", exc)
            return
        log.warning("search index of %s rebuilt (%d messages indexed)", self.path, rows)

    async def rebuild_index(self) -> int:
        """Drop and rebuild the search index (the caller holds write_lock); rows indexed."""
        rows = await asyncio.to_thread(rebuild_search_index, self.path, self.lock_timeout)
        # FTS5 keeps per-connection state of the table it replaced (its config, a failed
        # constructor): only a fresh connection sees the new one. Reads already queued on
        # the old connection finish there before it closes.
        old = self._conn
        try:
            self._conn = await connect_async(self.path)
        except (OSError, sqlite3.Error) as exc:
            raise self.translate(exc) from exc
        await old.close()
        return rows

    async def close(self) -> None:
        """Refuse further statements and close the connection."""
        self.closed = True
        await self._conn.close()
