"""User-facing storage errors, each with a one-sentence message that says what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class StorageError(Exception):
    """Base class of every error the session store raises to its callers."""


class StorageLockedError(StorageError):
    """Another process holds the write lock for longer than the retry window."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"the session database {path} is locked by another process "
            "(another hermes-tui?); close it and retry"
        )


class StorageCorruptError(StorageError):
    """The database file is damaged or is not a SQLite database."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"the session database {path} is corrupt or not a SQLite database; "
            "move it aside and hermes-tui will start a fresh one"
        )


class StorageReadOnlyError(StorageError):
    """The database file (or its directory) cannot be written."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"the session database {path} is read-only; check the permissions of the file "
            "and its directory"
        )


class StorageFullError(StorageError):
    """The disk holding the database is full."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(f"the disk holding the session database {path} is full; free some space")


class StorageVersionError(StorageError):
    """The database was written by a newer hermes-tui than this one."""

    def __init__(self, path: Path | str, found: int, known: int) -> None:
        super().__init__(
            f"the session database {path} has schema version {found}, newer than the "
            f"{known} this hermes-tui understands; upgrade hermes-tui"
        )


class StorageClosedError(StorageError):
    """The database was used after close()."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(f"the session database {path} is closed")


class UnknownSessionError(StorageError):
    """A write named a session id that is not in the database."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} does not exist in the session database")


_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED")


def _errorname(exc: BaseException) -> str:
    return getattr(exc, "sqlite_errorname", "") or ""


def is_busy(exc: BaseException) -> bool:
    """True when a sqlite3 error means another connection holds the lock."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    name = _errorname(exc)
    if name:
        return name.startswith(_BUSY)
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


def translate(exc: BaseException, path: Path | str) -> StorageError:
    """Map a sqlite3 (or OS) error to the StorageError subclass that explains it to a user."""
    if isinstance(exc, StorageError):
        return exc
    name = _errorname(exc)
    text = str(exc).lower()
    if is_busy(exc):
        return StorageLockedError(path)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return StorageFullError(path)
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return StorageReadOnlyError(path)
    if (
        name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
        or "not a database" in text
        or "malformed" in text
    ):
        return StorageCorruptError(path)
    if isinstance(exc, PermissionError):
        return StorageReadOnlyError(path)
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return StorageError(
            f"the session database {path} cannot be opened; check that its directory exists "
            "and is writable"
        )
    if isinstance(exc, OSError) and getattr(exc, "errno", None) == 28:  # ENOSPC
        return StorageFullError(path)
    return StorageError(f"the session database {path} failed: {exc}")
