"""SQLite session store: no Textual, no agent imports.

The public names load on first use (PEP 562), so a module that needs only `storage.files`
or `storage.errors` (the app before its first frame) does not import the database and
aiosqlite with them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "SCHEMA_VERSION": "schema",
    "MessageRow": "rows",
    "SearchHit": "rows",
    "SessionDB": "db",
    "SessionRow": "rows",
    "StorageClosedError": "errors",
    "StorageCorruptError": "errors",
    "StorageError": "errors",
    "StorageFullError": "errors",
    "StorageIndexCorruptError": "errors",
    "StorageLockedError": "errors",
    "StorageNotSavedError": "errors",
    "StorageReadOnlyError": "errors",
    "StorageVersionError": "errors",
    "UnknownSessionError": "errors",
}
"""Each public name and the module that defines it."""

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


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'storage' has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
