"""The turn's control state: phase, stop, redirect and the abort of the model call in flight.

`stop()` and `redirect()` arrive from the UI thread while the worker runs the turn; every
change of this state happens under one lock, so a stop and a redirect that race are decided
in one order, and a stop always wins (T5, T6).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from agent.kinds import Phase
from agent.providers.base import Abort


class TurnStopped(Exception):
    """Raised inside a turn when the user stopped it."""


class TurnControl:
    """Phase, stop flag, pending redirect and current abort of one agent, thread-safe.

    `lock` is reentrant and public so that a caller can make several changes atomically
    (a redirect and a stop that land before the worker reacts to either).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._phase = Phase.IDLE
        self._stop = threading.Event()
        self.tool_cancel = threading.Event()
        """Set by a stop: the running tool batch and its shell commands end (H6)."""
        self._abort = Abort()
        self._redirect: str | None = None
        self._expected = False  # a turn is on its way to a worker: its stop must not be cleared
        self._passed_on: list[Callable[[], None]] = []

    # -- reading ----------------------------------------------------------------------------
    @property
    def phase(self) -> Phase:
        """What the agent is doing now."""
        return self._phase

    @property
    def stopped(self) -> bool:
        """True once `stop()` was called in this turn."""
        return self._stop.is_set()

    def wait_for_stop(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early on a stop; returns `stopped`."""
        return self._stop.wait(seconds)

    # -- the worker's transitions ----------------------------------------------------------------
    def expect_turn(self) -> None:
        """A turn is on its way to a worker thread: from now on a stop stops it (Z1).

        Called on the thread that starts the worker, before it does: a stop that lands
        before the worker reaches `begin_turn` is kept, not cleared by it.
        """
        with self.lock:
            self._stop.clear()
            self.tool_cancel.clear()
            self._redirect = None
            self._expected = True

    def take_expected(self) -> bool:
        """Whether this turn was announced by `expect_turn` (and forget that it was)."""
        with self.lock:
            expected, self._expected = self._expected, False
            return expected

    def begin_turn(self, *, expected: bool = False) -> bool:
        """A turn starts: no redirect, the model phase; False (still idle) when an
        `expected` turn was stopped on its way, before it began."""
        with self.lock:
            if expected and self._stop.is_set():
                return False
            self._stop.clear()
            self.tool_cancel.clear()
            self._redirect = None
            self._phase = Phase.MODEL
            return True

    def begin_compaction(self) -> None:
        """`/compact` starts outside a turn."""
        with self.lock:
            self._expected = False
            self._stop.clear()
            self._phase = Phase.COMPACTING

    def end(self) -> str | None:
        """Back to idle; returns a redirect that arrived after the last model call, if any."""
        with self.lock:
            self._phase = Phase.IDLE
            leftover, self._redirect = self._redirect, None
        return leftover

    def new_call(self) -> Abort | None:
        """A fresh abort for the next model call attempt; None when a stop or redirect waits."""
        with self.lock:
            if self._stop.is_set() or self._redirect is not None:
                return None
            self._abort = abort = Abort()
            return abort

    def take_redirect(self) -> str | None:
        """The redirect text waiting for the loop (and forget it), or None."""
        with self.lock:
            text, self._redirect = self._redirect, None
            return text

    def enter_tools(self) -> bool:
        """The tool batch starts; False (and no phase change) when the turn was stopped."""
        with self.lock:
            if self._stop.is_set():
                return False
            self._phase = Phase.TOOLS
            return True

    def leave_tools(self) -> None:
        """The tool batch ended: back to the model phase (unless the turn already ended)."""
        with self.lock:
            if self._phase == Phase.TOOLS:
                self._phase = Phase.MODEL

    # -- from any thread -----------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the turn: the model call is aborted and the tool batch cancelled (T6)."""
        with self.lock:
            self._stop.set()
            self.tool_cancel.set()
            self._abort.fire()
            passed_on = list(self._passed_on)
        for stop in passed_on:
            stop()

    @contextlib.contextmanager
    def passing_stop_to(self, stop: Callable[[], None]) -> Iterator[None]:
        """While the block runs, a stop of this turn calls `stop` too (a subagent's, G1);
        one that came before the block is passed on at once."""
        with self.lock:
            self._passed_on.append(stop)
            already = self._stop.is_set()
        if already:
            stop()
        try:
            yield
        finally:
            with self.lock:
                self._passed_on.remove(stop)

    def redirect(self, text: str, steer: Callable[[str], bool]) -> bool:
        """Cancel the model call in flight and leave `text` for the loop to re-run with (T5).

        During tools it degrades to `steer(text)`. False when nothing took the text (no
        turn, or a stop already won).
        """
        with self.lock:
            if self._stop.is_set() or self._phase == Phase.IDLE:
                return False
            if self._phase != Phase.MODEL:
                return steer(text)
            if self._redirect is not None:
                self._redirect += "\n\n" + text
            else:
                self._redirect = text
            self._abort.fire()
            return True
