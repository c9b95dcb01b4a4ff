"""Opening a session database (private file, WAL, migrations) and close()'s bounded exit wait."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from .connection import StoreConnection
from .errors import StorageVersionError, describe_pending, exit_wait_notice, translate
from .owning_loop import OwningLoop
from .schema import MIGRATIONS, SCHEMA_VERSION
from .sqlite import connect_async, prepare_private_file

log = logging.getLogger("hermes_tui.storage")


async def open_connection(path: Path, lock_timeout: float) -> StoreConnection:
    """Connect to the database at path (created private if missing), in WAL mode, migrated.

    Raises the StorageError that explains what went wrong (locked, corrupt, read-only, newer).
    """
    try:
        prepare_private_file(path)
        raw = await connect_async(path)
    except (OSError, sqlite3.Error) as exc:
        raise translate(exc, path) from exc
    conn = StoreConnection(path, raw, lock_timeout)
    try:
        await _bring_up_to_date(conn)
    except BaseException as exc:
        await conn.close()
        if isinstance(exc, (sqlite3.Error, OSError)):
            raise translate(exc, path) from exc
        raise
    return conn


async def _bring_up_to_date(conn: StoreConnection) -> None:
    # Reading the header first turns "not a database" into a clear error before anything
    # else touches the file.
    version = await _user_version(conn)
    if version > SCHEMA_VERSION:
        raise StorageVersionError(conn.path, version, SCHEMA_VERSION)
    await conn.retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    if version < SCHEMA_VERSION:
        await _migrate(conn)


async def _user_version(conn: StoreConnection) -> int:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    assert row is not None  # PRAGMA user_version always answers one row
    return int(row[0])


async def _migrate(conn: StoreConnection) -> None:
    async with conn.write_lock:
        await conn.begin_immediate()
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            version = await _user_version(conn)
            if version > SCHEMA_VERSION:
                raise StorageVersionError(conn.path, version, SCHEMA_VERSION)
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target - 1]:
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version = {target}")
            await conn.execute("COMMIT")
        except BaseException:
            await conn.rollback_quietly()
            raise


class ExitWait:
    """close()'s wait for writes another process's lock holds up: bounded, told once.

    Once started, no lock window of the store reaches past its deadline; the first time the
    wait is really for a lock, `on_wait` hears one sentence saying what it waits to save;
    writes still held at the deadline are given up and counted in `unsaved`.
    """

    def __init__(
        self,
        path: Path,
        owner: OwningLoop,
        idle: Callable[[], bool],
        describe_pending: Callable[[], str],
    ) -> None:
        self.path = path
        self.deadline: float | None = None
        self.unsaved: Counter[str] = Counter()  # writes given up on, by kind
        self._owner = owner
        self._idle = idle
        self._describe_pending = describe_pending
        self._on_wait: Callable[[str], None] | None = None
        self._told = False

    def start(self, seconds: float, on_wait: Callable[[str], None] | None) -> float:
        """Begin the wait: it ends `seconds` from now (the deadline, returned)."""
        self.deadline = time.monotonic() + seconds
        self._on_wait = on_wait
        return self.deadline

    def announce(self) -> None:
        """Tell on_wait, once per close and on the owning loop, what the exit waits for."""
        self._owner.soon(self._announce_on_loop)

    def _announce_on_loop(self) -> None:
        remaining = 0.0 if self.deadline is None else self.deadline - time.monotonic()
        if self._told or remaining <= 0 or self._idle():
            return  # told already, no wait left (close(wait=0)), or nothing to wait for
        self._told = True
        sentence = exit_wait_notice(self.path, remaining, self._describe_pending())
        log.warning("%s", sentence)
        if self._on_wait is not None:
            try:
                self._on_wait(sentence)
            except Exception:
                log.exception("on_wait callback failed")

    def note_unsaved(self, kinds: Counter[str]) -> None:
        """Writes the stopping writer gave up on (the lock outlasted the exit wait)."""
        self.unsaved.update(kinds)
        log.warning("not saved at exit: %s", describe_writes(kinds, tokens=0))


def describe_writes(kinds: Counter[str], *, tokens: int) -> str:
    """Queued writes by kind (and token deltas) in words: `3 messages and token counts`."""
    details = kinds["session_update"] + kinds["checkpoint"] + kinds["checkpoint_update"]
    return describe_pending(kinds["message"], details, tokens)
