"""Schema: migrations by user_version, WAL, version guard, no reasoning text column, errors."""

from __future__ import annotations

import sqlite3

import pytest

from storage import (
    SCHEMA_VERSION,
    SessionDB,
    StorageCorruptError,
    StorageError,
    StorageVersionError,
)
from storage.errors import (
    StorageFullError,
    StorageLockedError,
    StorageReadOnlyError,
    translate,
)
from storage.schema import MIGRATIONS


def _columns(path) -> dict[str, list[tuple[str, str]]]:
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            t: [(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info('{t}')")] for t in tables
        }
    finally:
        conn.close()


async def test_migrates_empty_file_and_reopens_idempotently(tmp_path):
    path = tmp_path / "nested" / "dir" / "state.db"
    db = await SessionDB.open(path)
    s = await db.create_session(model="m", provider="p", workspace="/w")
    await db.close()
    assert path.exists()

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    conn.close()

    db = await SessionDB.open(path)
    assert (await db.get_session(s["id"]))["model"] == "m"
    await db.close()
    assert set(_columns(path)) >= {"sessions", "messages", "session_model_usage", "messages_fts"}


async def test_wal_mode_and_foreign_keys(db):
    async with db._conn.execute("PRAGMA journal_mode") as cur:
        assert (await cur.fetchone())[0].lower() == "wal"
    async with db._conn.execute("PRAGMA foreign_keys") as cur:
        assert (await cur.fetchone())[0] == 1


async def test_both_connections_fsync_every_commit(db):
    # synchronous=FULL (2): a commit survives power loss, not only a killed process (S8).
    async with db._conn.execute("PRAGMA synchronous") as cur:
        assert (await cur.fetchone())[0] == 2
    from storage.accounting import TokenAccounting

    accounting = TokenAccounting(db.path)
    try:
        assert accounting._connection().execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        accounting.close()


async def test_newer_database_than_code_raises(tmp_path):
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 3}")
    conn.close()
    with pytest.raises(StorageVersionError) as info:
        await SessionDB.open(path)
    message = str(info.value)
    assert str(path) in message and "upgrade hermes-tui" in message
    assert str(SCHEMA_VERSION + 3) in message


async def test_corrupt_file_raises_clear_error(tmp_path):
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a database at all" * 200)
    with pytest.raises(StorageCorruptError) as info:
        await SessionDB.open(path)
    assert "corrupt or not a SQLite database" in str(info.value)
    assert str(path) in str(info.value)


async def test_no_column_holds_reasoning_text(db):
    # SPEC R1: reasoning is display-only. The only "reasoning" column allowed is the count.
    for table, columns in _columns(db.path).items():
        for name, kind in columns:
            if "reasoning" in name.lower():
                assert (name, kind) == ("reasoning_tokens", "INTEGER"), (table, name)
    source = "\n".join(stmt for migration in MIGRATIONS for stmt in migration).lower()
    assert source.count("reasoning") == source.count("reasoning_tokens")


def _sqlite_error(cls, text, name):
    exc = cls(text)
    exc.sqlite_errorname = name
    return exc


@pytest.mark.parametrize(
    ("exc", "expected", "phrase"),
    [
        (
            _sqlite_error(sqlite3.OperationalError, "database is locked", "SQLITE_BUSY"),
            StorageLockedError,
            "locked by another process (another hermes-tui?); close it and retry",
        ),
        (
            _sqlite_error(sqlite3.OperationalError, "database or disk is full", "SQLITE_FULL"),
            StorageFullError,
            "is full",
        ),
        (
            _sqlite_error(
                sqlite3.OperationalError,
                "attempt to write a readonly database",
                "SQLITE_READONLY",
            ),
            StorageReadOnlyError,
            "read-only",
        ),
        (
            _sqlite_error(
                sqlite3.DatabaseError, "database disk image is malformed", "SQLITE_CORRUPT"
            ),
            StorageCorruptError,
            "corrupt",
        ),
        (OSError(28, "No space left on device"), StorageFullError, "is full"),
        (PermissionError(13, "Permission denied"), StorageReadOnlyError, "read-only"),
    ],
)
def test_errors_translate_to_one_clear_sentence(exc, expected, phrase):
    err = translate(exc, "/data/u/state.db")
    assert type(err) is expected
    assert isinstance(err, StorageError)
    assert phrase in str(err) and "/data/u/state.db" in str(err)
    assert "\n" not in str(err)


async def test_a_version_1_database_gains_the_estimated_calls_counter(tmp_path):
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO sessions (id, model, provider, api_call_count) VALUES ('s1', 'm', 'p', 3)"
    )
    conn.close()
    db = await SessionDB.open(path)
    try:
        row = await db.get_session("s1")
        assert (row["api_call_count"], row["estimated_calls"]) == (3, 0)
    finally:
        await db.close()
    assert ("estimated_calls", "INTEGER") in _columns(path)["session_model_usage"]
