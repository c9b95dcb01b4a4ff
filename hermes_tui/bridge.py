"""Agent events (worker thread) -> Textual messages, with deltas coalesced per frame."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from textual.app import App
from textual.css.query import NoMatches
from textual.message import Message
from textual.widget import MountError

from agent.events import STREAMED_TEXT, AgentEvent, ReasoningDelta, TextDelta

FRAME_SECONDS = 1 / 60


class AgentEvents(Message):
    """A batch of agent events, in emission order, with adjacent deltas merged."""

    def __init__(self, events: list[AgentEvent]) -> None:
        super().__init__()
        self.events = events


class Bridge:
    """The agent's sink: buffers events and posts at most one `AgentEvents` per frame.

    The worker thread only appends under a lock; the first event of a frame schedules one
    flush on the app's loop, so a fast stream costs one Textual message per frame instead
    of one per token.
    """

    def __init__(
        self,
        app: App[Any],
        *,
        frame_seconds: float = FRAME_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._app = app
        self._frame = frame_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._buffer: list[AgentEvent] = []
        # The run of same-kind deltas at the end of the buffer, joined once when it closes:
        # merging a delta per event copied the growing text each time.
        self._run_kind: type[TextDelta] | type[ReasoningDelta] | None = None
        self._run: list[str] = []
        self._pending = False
        self._last_flush = float("-inf")

    def __call__(self, event: AgentEvent) -> None:
        """Receive one event from any thread."""
        kind = type(event)
        with self._lock:
            if kind is self._run_kind:
                # `kind is self._run_kind` (a delta class) proves `.text`; an isinstance per
                # streamed token would cost more than it says.
                self._run.append(event.text)  # type: ignore[union-attr]
            else:
                self._close_run()
                if kind in STREAMED_TEXT:
                    self._run_kind = kind
                    self._run = [event.text]  # type: ignore[union-attr]  # STREAMED_TEXT: deltas
                else:
                    self._buffer.append(event)
            if self._pending:
                return
            self._pending = True
        # call_later posts a Callback message, which is safe from another thread.
        self._app.call_later(self._schedule_flush)

    @property
    def pending(self) -> bool:
        """True while received events wait for their flush."""
        return self._pending

    def drain(self) -> list[AgentEvent]:
        """Take every buffered event now (UI thread), clearing the pending flag."""
        with self._lock:
            self._close_run()
            events, self._buffer = self._buffer, []
            self._pending = False
        return events

    def _close_run(self) -> None:
        """End the trailing delta run as one event (under the lock)."""
        if self._run_kind is not None:
            self._buffer.append(self._run_kind("".join(self._run)))
            self._run_kind = None
            self._run = []

    def _schedule_flush(self) -> None:
        wait = self._last_flush + self._frame - self._clock()
        if wait > 0:
            self._app.set_timer(wait, self.flush)
        else:
            self.flush()

    def flush(self) -> None:
        """Post everything buffered now as one batch (UI thread)."""
        events = self.drain()
        self._last_flush = self._clock()
        if events:
            # Through the app's queue, so batches and other messages keep their order.
            self._app.post_message(AgentEvents(events))


async def unless_shut_down(app: App[Any], showing: Awaitable[object]) -> None:
    """Await `showing`; widgets that vanish because the app shut down meanwhile are fine.

    Textual's shutdown prunes the screens beside the message loop, so a handler that awaits
    (mounting a row, refreshing a panel) can wake to find the widgets it needs gone, not broken.
    """
    try:
        await showing
    except (NoMatches, MountError):
        if app.is_running:
            raise
