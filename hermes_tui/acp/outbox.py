"""The bounded way from the agent's worker thread to the client: a slow client slows the
turn down, it never grows a queue (E1).

The worker takes a credit for each send and the loop gives it back once the send was
written, so at most `limit` sends wait at any time; a worker with no credit waits, and
gives up when the connection is gone (the client left: nothing more can reach it).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

log = logging.getLogger("hermes_tui.acp")

LIMIT = 256
"""Sends queued for one session at most (notifications, and the permission asks among them)."""
POLL = 0.1
"""How often a worker waiting for a credit looks whether the client has gone (seconds)."""

Send = Callable[[], Awaitable[object]]


class Outbox:
    """A FIFO of sends to the client, filled from any thread, written by one task on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int = LIMIT) -> None:
        self._loop = loop
        self.limit = limit
        self._credits = threading.Semaphore(limit)
        self._queue: asyncio.Queue[tuple[Send, bool]] = asyncio.Queue()
        self.closed = threading.Event()
        self.waiting = 0
        """Sends queued and not yet written (never more than `limit`)."""
        self.most_waiting = 0
        """The most that were ever waiting at once (tests read it)."""
        self._count = threading.Lock()

    def put(self, send: Send) -> bool:
        """Queue `send`; blocks a worker thread while `limit` sends wait. False: closed."""
        on_loop = _running_loop() is self._loop
        # The loop never waits for its own pump: its few sends (a mode switch's notice) go
        # through; everything a turn streams comes from the worker, which does wait.
        credited = self._credits.acquire(blocking=False)
        while not on_loop and not credited:
            if self.closed.is_set():
                return False
            credited = self._credits.acquire(timeout=POLL)
        if self.closed.is_set():
            if credited:
                self._credits.release()
            return False
        with self._count:
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (send, credited))
        return True

    async def pump(self) -> None:
        """Write the queued sends in order, until cancelled; a failed send is logged."""
        while True:
            send, credited = await self._queue.get()
            try:
                await send()
            except ConnectionError:
                self.close()
            except Exception:
                log.exception("a send to the ACP client failed")
            finally:
                with self._count:
                    self.waiting -= 1
                if credited:
                    self._credits.release()

    def close(self) -> None:
        """No more sends: waiting workers give up (the client has gone)."""
        self.closed.set()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
