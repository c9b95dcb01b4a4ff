"""SQLite session store: no Textual, no agent imports."""

from .db import SessionDB
from .errors import (
    StorageClosedError,
    StorageCorruptError,
    StorageError,
    StorageFullError,
    StorageIndexCorruptError,
    StorageLockedError,
    StorageNotSavedError,
    StorageReadOnlyError,
    StorageVersionError,
    UnknownSessionError,
)
from .rows import MessageRow, SearchHit, SessionRow
from .schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "MessageRow",
    "SearchHit",
    "SessionDB",
    "SessionRow",
    "StorageClosedError",
    "StorageCorruptError",
    "StorageError",
    "StorageFullError",
    "StorageIndexCorruptError",
    "StorageLockedError",
    "StorageNotSavedError",
    "StorageReadOnlyError",
    "StorageVersionError",
    "UnknownSessionError",
]
