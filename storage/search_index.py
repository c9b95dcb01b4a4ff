"""Rebuilding the full-text search index from the messages it indexes.

The index (`messages_fts` and its shadow tables) is derived data: the text lives in
`messages`. A damaged index is dropped and built again from there. FTS5 cannot drop a table
whose shadow tables are broken badly enough that it cannot even be opened (a missing
structure record, a bad config row), so that case first removes the table's schema row by
hand (`writable_schema`, the documented way out) and then drops the shadow tables as the
plain tables they have become.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from .errors import is_index_damaged, translate
from .schema import FTS_FILL, FTS_TABLE
from .sqlite import LockWindow, begin_immediate, connect

log = logging.getLogger("hermes_tui.storage")

SHADOW_TABLES = (
    "messages_fts_data",
    "messages_fts_idx",
    "messages_fts_docsize",
    "messages_fts_config",
)


def rebuild_search_index(path: Path, lock_timeout: float) -> int:
    """Drop and rebuild the search index of the database at path; returns the rows indexed.

    Runs on its own connection and transaction (the caller must not be inside a write
    transaction on the same file). Raises a StorageError when it cannot.
    """
    try:
        try:
            return _rebuild(path, lock_timeout)
        except sqlite3.DatabaseError as exc:
            if not is_index_damaged(exc):
                raise
            log.warning("search index cannot be dropped (%s); removing its schema row", exc)
            _forget_index_table(path, lock_timeout)
            return _rebuild(path, lock_timeout)
    except sqlite3.Error as exc:
        raise translate(exc, path) from exc


def _rebuild(path: Path, lock_timeout: float) -> int:
    conn = connect(path)
    try:
        begin_immediate(conn, LockWindow(path, lock_timeout))
        try:
            conn.execute("DROP TABLE IF EXISTS messages_fts")
            for table in SHADOW_TABLES:  # left behind by _forget_index_table
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(FTS_TABLE)
            rows = conn.execute(FTS_FILL).rowcount
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return rows
    finally:
        conn.close()


def _forget_index_table(path: Path, lock_timeout: float) -> None:
    """Remove the unopenable index's schema row; its shadow tables become plain tables.

    Committed on its own: a connection only rereads the schema once it is reopened. If the
    process dies before the rebuild, the triggers name a missing table, which the next write
    reports as a damaged index and rebuilds.
    """
    conn = connect(path)
    try:
        begin_immediate(conn, LockWindow(path, lock_timeout))
        try:
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts'")
            conn.execute("PRAGMA writable_schema = OFF")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
