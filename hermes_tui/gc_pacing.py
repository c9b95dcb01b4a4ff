"""The cyclic garbage collector waits while a resume builds, and catches up at idle (Z2, U5).

Opening a session removes the old one's widgets (garbage in reference cycles, only a full
collection frees them) and builds tens of thousands of new objects; those survivors are what
triggers a full collection, so one landed in most opens of a long session, a few hundred
milliseconds between the resume and its first paint. While a resume and the Markdown build
near its view run, the collector is off; once the view has been built and nothing has asked
for a collection's pause for `IDLE_DELAY` seconds, one full collection frees what the resume
left and the collector runs as usual again. Neither back-to-back resumes with no idle between
them nor a view that keeps building (a long answer streaming in) let garbage pile up past
`HELD_LIMIT` objects: the next resume, or the next check, collects first.

A turn is held the same way (hermes_tui/turns.py): a streamed answer mounts hundreds of
Markdown blocks, and the full collections those survivors triggered (35-120 ms each, one or
two per 100 KB answer) landed mid-stream, the hand-over to the chunked answer among them. Each
batch of the turn's events checks the bound (`bound`), so a turn of any length keeps memory
bounded; the catch-up runs once the app is idle after it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Protocol

IDLE_DELAY = 1.0
"""Seconds of idle (the view built, no new resume) before the catch-up collection."""
HELD_LIMIT = 250_000
"""Objects allocated while the collector waits beyond which a new resume collects first: a
flood of resumes with no idle between them keeps memory bounded."""


class Stoppable(Protocol):
    def stop(self) -> None:
        """Cancel the timer."""


Schedule = Callable[[float, Callable[[], None]], Stoppable]
"""Run a callback once after a delay (Textual's `set_timer`), returning a handle to stop."""


class GcPacing:
    """Holds the collector during a resume and collects once at idle after it."""

    def __init__(
        self,
        schedule: Schedule,
        busy: Callable[[], bool],
        delay: Callable[[], float] = lambda: IDLE_DELAY,
        collect: Callable[[], object] = gc.collect,
        count: Callable[[], int] = lambda: gc.get_count()[0],
    ) -> None:
        self._schedule = schedule
        # A full collection and the allocation count: a test gives its own of each, since
        # any thread of the process allocates into the real count.
        self._collect_all = collect
        self._count = count
        self._busy = busy  # the view is still being built: not idle yet
        self._delay = delay  # asked at each scheduling: a test may change it meanwhile
        self._held = False
        self._since = 0  # the collector's allocation count when it last stopped or collected
        self._timer: Stoppable | None = None
        self.catch_ups = 0
        """Catch-up collections run so far (a test counts them)."""

    @property
    def held(self) -> bool:
        """True while this pacing keeps the collector off."""
        return self._held

    def hold(self) -> None:
        """Keep the collector off from now until the catch-up after `settle()`."""
        self._stop_timer()
        if self._held:
            if self._allocated() > HELD_LIMIT:
                self._collect()  # no idle since the last resume: do not let garbage pile up
            return
        if not gc.isenabled():
            return  # someone else paused it (start-up): theirs to resume
        gc.disable()
        self._held = True
        self._since = self._count()

    def bound(self) -> None:
        """While held: collect once more than HELD_LIMIT objects piled up (a long turn)."""
        if self._held and self._allocated() > HELD_LIMIT:
            self._collect()

    def settle(self) -> None:
        """The resume is done: collect once the view is built and the app is idle."""
        if self._held:
            self._stop_timer()
            self._timer = self._schedule(self._delay(), self._idle)

    def release(self) -> None:
        """Resume the collector at once, without the catch-up (the app is ending)."""
        self._stop_timer()
        if self._held:
            self._held = False
            gc.enable()

    def _idle(self) -> None:
        self._timer = None
        if not self._held:
            return
        if self._busy() and self._allocated() <= HELD_LIMIT:
            self._timer = self._schedule(self._delay(), self._idle)  # a fill, a long stream: later
            return
        self._collect()
        self._held = False
        gc.enable()

    def _collect(self) -> None:
        self._collect_all()
        self.catch_ups += 1
        self._since = self._count()

    def _allocated(self) -> int:
        # Counted from when it stopped, not read alone: the count is since the last
        # collection of the youngest generation, which the process may not have had for a
        # while (it was seen over the limit the moment the collector stopped).
        return self._count() - self._since

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
