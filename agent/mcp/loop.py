"""The background asyncio loop every MCP session lives on, and calls into it with a deadline.

Sessions are long-lived anyio task groups, so they need a loop of their own that is never the
UI's: the UI thread only reads snapshots, the agent's worker waits on a call with a timeout
and a stop, and nothing a server does (hang, flood, crash) can hold either of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger("hermes_tui.mcp")

T = TypeVar("T")
POLL_SECONDS = 0.05
"""How often a waiting worker looks at its stop flag: a stop ends a call within this."""


class CallCancelled(Exception):
    """The turn was stopped while an MCP call ran; the call was cancelled."""


class McpLoop:
    """A daemon thread running one asyncio loop, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop (started now if it was not yet)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._run, args=(self._loop,), name="mcp-loop", daemon=True
                )
                self._thread.start()
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> T:
        """Run `coro` on the loop and wait for it: TimeoutError after `timeout` seconds,
        CallCancelled as soon as `cancel` is set (the coroutine is cancelled either way)."""
        future = self.submit(coro)
        remaining = timeout
        try:
            while True:
                step = min(POLL_SECONDS, max(remaining, 0.0))
                # wait(), not result(step): the coroutine's own TimeoutError is its result.
                done, _ = concurrent.futures.wait([future], timeout=step)
                if done:
                    return future.result()
                remaining -= step
                if cancel is not None and cancel.is_set():
                    raise CallCancelled
                if remaining <= 0:
                    raise TimeoutError
        except BaseException:
            future.cancel()
            raise

    def close(self, timeout: float = 2.0) -> None:
        """Stop the loop and wait (bounded) for its thread; what still runs is abandoned."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:
            return  # already closed
        thread.join(timeout)
        if thread.is_alive():
            log.warning("the MCP loop did not stop within %.1f s; leaving it", timeout)
