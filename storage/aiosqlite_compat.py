"""Every use of aiosqlite's internals, in one place, each with why.

Each function names the private it relies on, and
tests/unit/storage/test_aiosqlite_compat.py checks each against the installed aiosqlite, so
an upgrade that breaks one fails there, naming the function to fix.
tests/unit/architecture/test_compat_seams.py keeps every other module off its privates.
"""

from __future__ import annotations

import aiosqlite
from aiosqlite.context import Result

PendingCursor = Result[aiosqlite.Cursor]
"""What `Connection.execute` returns: await it for the cursor, or `async with` it.

aiosqlite exports no name for it (`aiosqlite.context.Result` is a public module's class,
just not re-exported), so the store's type annotations name it here, once.
"""


def daemon_worker(pending: aiosqlite.Connection) -> None:
    """Make a not yet awaited connection's worker thread a daemon.

    Uses `Connection._thread` (the worker, built by the constructor, started on await):
    aiosqlite has no option for it, and a non-daemon worker keeps a process that never
    called close() (a crash, a failed test) from exiting.
    """
    pending._thread.daemon = True
