"""Enter's one path: each sent line runs after the one before it, and never on the app's
message queue, so keys (typing, Esc, ctrl+c) act while a send, a resume or a render goes on
(Z1)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from hermes_tui.doors import RunsWorkers

if TYPE_CHECKING:
    from hermes_tui.turns import TurnController

Job = Callable[[bool], Awaitable[object]]
"""A sent line's work; told whether a stop was asked after the line was sent."""


class SendHost(RunsWorkers, Protocol):
    """What the send line uses of the app: its worker, and the turns' count of stops."""

    turns: TurnController


class SendLine:
    """Runs sent lines in the order they were sent, one at a time, on a worker of its own.

    A slow line (a resume, a send into a long session) holds back only the lines sent
    after it, which keep their order; the keys go on being read meanwhile.
    """

    def __init__(self, app: SendHost) -> None:
        self.app = app
        self._lines: deque[tuple[Job, int]] = deque()
        self._running = False
        self._drained = asyncio.Event()
        self._drained.set()

    @property
    def pending(self) -> bool:
        """True from a line's Enter until it (and every line after it) has run."""
        return not self._drained.is_set()

    async def wait_drained(self) -> None:
        """Wait until every sent line has run."""
        await self._drained.wait()

    def enter(self, job: Job) -> None:
        """Run `job` after every line sent before it."""
        self._lines.append((job, self.app.turns.stops))
        self._drained.clear()
        if not self._running:
            self._running = True
            # An error is the app's to report, as one in a message handler would be.
            self.app.run_worker(self._drain(), name="send", group="send", exit_on_error=True)

    async def _drain(self) -> None:
        try:
            while self._lines:
                job, stops = self._lines.popleft()
                await job(self.app.turns.stops != stops)
        finally:
            self._running = False
            if not self._lines:
                self._drained.set()
