"""A pytest plugin: the run ends even when a test leaks a non-daemon thread.

Without it, a test that fails before it closes what it opened (a thread that waits forever)
keeps the interpreter alive after the summary, and CI hangs instead of going red. At the end
of the run this names every non-daemon thread still alive after a short grace and exits at
once, with status 1 when the tests had passed (a leak is a bug), else the tests' own status.
"""

from __future__ import annotations

import os
import sys
import threading
import time

GRACE_SECONDS = 3.0
_status: list[int] = []


def leaked_threads() -> list[threading.Thread]:
    """Non-daemon threads other than the main one that are still running."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def pytest_sessionfinish(session, exitstatus) -> None:
    _status.append(int(exitstatus))


def pytest_unconfigure(config) -> None:
    deadline = time.monotonic() + GRACE_SECONDS
    for thread in leaked_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    leaked = leaked_threads()
    if not leaked:
        return
    names = ", ".join(sorted(t.name for t in leaked))
    sys.stderr.write(f"\nexit guard: non-daemon threads still running at exit: {names}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    status = _status[-1] if _status else 1
    os._exit(status or 1)
