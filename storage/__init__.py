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
from .schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "SessionDB",
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
