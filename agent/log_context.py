"""Log records name the session they were logged for (C6).

`session_var` holds the current session's id; `log_session` sets it for a block. Nothing is
installed at import: whoever sets up logging (the app's log file, a test's capture) calls
`install_log_context` once, and from then on every record carries `record.session_id`.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Iterator
from typing import Any

session_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "hermes_session_id", default=None
)
"""The id of the session whose work runs in this context (None: none)."""

_factory_lock = threading.Lock()
_factory_installed = False


def install_log_context() -> None:
    """Stamp `record.session_id` on every log record from the current context (idempotent).

    A record factory (not a handler filter) so the stamp is taken on the thread that logs,
    whatever handler gets the record: the compaction helper runs in a copy of the caller's
    context and logs the same id.
    """
    global _factory_installed
    with _factory_lock:
        if _factory_installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            record.session_id = session_var.get() or "-"
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True


@contextlib.contextmanager
def log_session(session_id: str | None) -> Iterator[None]:
    """Log records in this block carry `session_id`; the caller's value is restored after."""
    token = session_var.set(session_id)
    try:
        yield
    finally:
        session_var.reset(token)
