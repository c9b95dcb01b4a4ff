"""User-facing storage errors, each with a one-sentence message that says what to do."""

from __future__ import annotations

import math
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


class StorageIndexCorruptError(StorageError):
    """The full-text search index is damaged; the messages it indexes are not."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(
            f"the search index of the session database {path} is damaged (your sessions and "
            "messages are intact); run `hermes-tui sessions reindex` to rebuild it"
        )


class StorageNotSavedError(StorageError):
    """Writes still queued behind another process's lock when the exit wait ran out."""

    def __init__(self, path: Path | str, what: str, waited: float) -> None:
        super().__init__(
            f"not saved: {what}; the session database {path} was still locked by another "
            f"process (another hermes-tui?) after {waited:.0f} s of waiting"
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


def sentence(message: BaseException | str) -> str:
    """A storage message (`the session database ... is locked ...`) as a sentence of its own."""
    text = str(message).strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def lock_wait_notice(path: Path | str) -> str:
    """The one sentence for writes that wait behind another process's lock (H7, S7)."""
    return (
        f"Saving is waiting: the session database {path} is locked by another process "
        "(another hermes-tui?); nothing is lost, this session's writes stay queued and are "
        "saved once it is released."
    )


def exit_wait_notice(path: Path | str, seconds: float, what: str) -> str:
    """The sentence shown while exit waits for a held lock to save what is queued."""
    seconds = math.ceil(seconds)  # "up to 1 s", never "up to 0 s"
    return f"waiting up to {seconds} s for the database lock on {path} to clear to save {what}"


def describe_pending(messages: int, session_updates: int, token_updates: int) -> str:
    """What a write queue still holds, in words: `3 messages, session details and token counts`."""
    parts = []
    if messages:
        parts.append("1 message" if messages == 1 else f"{messages} messages")
    if session_updates:
        parts.append("session details")  # titles, model switches, heartbeats
    if token_updates:
        parts.append("token counts")  # deltas coalesce, so a count would not mean much
    if not parts:
        return "nothing"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


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


# FTS5 reports a damaged index as SQLITE_CORRUPT_VTAB, and a broken config row, a missing
# structure record or a half-finished rebuild as plain errors with these words. (Not just
# "fts5": a query's syntax error says "fts5: syntax error" and is no damage.)
_INDEX_WORDS = (
    "invalid fts5 file format",
    "vtable constructor failed: messages_fts",
    "no such table: main.messages_fts",
    "no such table: messages_fts",
)


def is_index_damaged(exc: BaseException) -> bool:
    """True when a sqlite3 error comes from a damaged full-text index, not the tables."""
    if isinstance(exc, StorageIndexCorruptError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    if _errorname(exc).startswith("SQLITE_CORRUPT_VTAB"):
        return True
    text = str(exc).lower()
    return any(word in text for word in _INDEX_WORDS)


def translate(exc: BaseException, path: Path | str) -> StorageError:
    """Map a sqlite3 (or OS) error to the StorageError subclass that explains it to a user."""
    if isinstance(exc, StorageError):
        return exc
    name = _errorname(exc)
    text = str(exc).lower()
    if is_busy(exc):
        return StorageLockedError(path)
    if is_index_damaged(exc):
        return StorageIndexCorruptError(path)
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
