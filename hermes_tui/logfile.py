"""Log records go to a private, rotating file under $HERMES_TUI_HOME/logs/, never the terminal.

Every logger (httpx, openai, anthropic, asyncio, our own `hermes_tui.*`) propagates to the
root logger, which gets this one handler. With a handler in place Python's last-resort
handler stays silent, so no record, and no traceback, is printed on the user's terminal;
exceptions in threads and warnings are logged the same way.
"""

from __future__ import annotations

import logging
import threading
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

LOG_FILE = "hermes-tui.log"
MAX_BYTES = 1_000_000
"""A log file is rotated at this size; BACKUPS old files are kept, so the logs stay bounded."""
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(session)s] %(message)s"


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler whose files (the first and every rotated one) are 0600."""

    def _open(self) -> TextIOWrapper:
        from storage.files import private_file

        private_file(self.baseFilename)  # logging would create it with the umask's mode
        return super()._open()


class _SessionField(logging.Filter):
    """Gives every record a `session` field: the session id agent.log_context stamped, or -."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.session = getattr(record, "session_id", "-")
        return True


_installed: logging.Handler | None = None


def setup_logging(home: Path) -> Path | None:
    """Send every log record to home/logs/hermes-tui.log; returns that path (None: no file).

    When the file cannot be made (a read-only home, say), records are dropped rather than
    printed: the failure that matters reaches the user as a sentence of its own.
    """
    global _installed
    root = logging.getLogger()
    if _installed is not None:
        root.removeHandler(_installed)
        _installed.close()
    wanted = home / "logs" / LOG_FILE
    path: Path | None = wanted
    handler: logging.Handler
    try:
        from storage.files import private_dir

        private_dir(wanted.parent)
        handler = PrivateRotatingFileHandler(
            wanted, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
    except OSError:
        path, handler = None, logging.NullHandler()
    from agent.log_context import install_log_context
    from agent.providers.errors import RedactingFilter

    install_log_context()  # C6: each record names the session it was logged for
    handler.addFilter(RedactingFilter())  # K3: no key reaches the file either
    handler.addFilter(_SessionField())
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("hermes_tui").setLevel(logging.INFO)
    _installed = handler
    # A full disk must not turn logging itself into a traceback on the terminal.
    logging.raiseExceptions = False
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception
    return path


def _log_thread_exception(args: Any) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    logging.getLogger("hermes_tui.threads").error(
        "uncaught exception in thread %s",
        name,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def log_path() -> Path | None:
    """The log file setup_logging opened, if any."""
    if isinstance(_installed, RotatingFileHandler):
        return Path(_installed.baseFilename)
    return None


def report_bug(exc: BaseException) -> str:
    """Log a bug's traceback to the file; the one line to print instead of the traceback."""
    logging.getLogger("hermes_tui").error("unexpected error", exc_info=exc)
    where = log_path()
    detail = f"; the details are in {where}" if where is not None else ""
    name = type(exc).__name__
    return f"internal error ({name}: {exc}){detail}; please report it"
