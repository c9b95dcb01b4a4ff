"""The event loop that opened a SessionDB, and how other threads reach it.

The store's connection and its message writer live on that loop. The agent's worker thread
and the accounting thread never touch them directly: they schedule a callback there, or run
a coroutine there and wait for its result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .errors import StorageError

_T = TypeVar("_T")


class OwningLoop:
    """The loop a SessionDB was opened on, and the thread that runs it."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()

    def is_current(self) -> bool:
        """True when called on the loop's own thread."""
        return threading.get_ident() == self.thread

    def soon(self, fn: Callable[..., object], *args: Any) -> None:
        """Run fn(*args) on the loop: now when called there, else at its next turn.

        Dropped when the loop is gone (a drain at interpreter exit): there is nobody to tell.
        """
        if self.is_current():
            fn(*args)
            return
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass

    def run(
        self,
        coro_fn: Callable[..., Coroutine[Any, Any, _T]],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        timeout: float,
    ) -> _T:
        """Run coro_fn(*args, **kwargs) on the loop from another thread and return its result."""
        if self.is_current():
            raise RuntimeError(
                "SessionDB.call/flush_threadsafe would deadlock on the loop that owns the "
                "database; await the async method instead"
            )
        if self.loop.is_closed():
            raise StorageError("the event loop that owns the session database has stopped")
        fut = asyncio.run_coroutine_threadsafe(coro_fn(*args, **kwargs), self.loop)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise
