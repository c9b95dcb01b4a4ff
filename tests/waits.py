"""The one way tests wait: poll a condition until it holds, with a deadline; never sleep.

`wait_until(predicate)` polls from the calling thread (workers, servers, child processes, a
tmux pane). `await wait_until(pilot, predicate)` is the same wait for a Textual app: it pumps
the app between polls, so the condition can come true on the app's own event loop. One name,
two forms told apart by the first argument; tests/unit/architecture/test_waits.py checks that
the pilot form is always awaited and the thread form never is.

`holds_for(predicate, seconds)` is the negative check: something must *not* happen for a
stated time (the time is the subject of the test, not a pause to let things settle).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

DEFAULT_TIMEOUT = 30.0
"""How long a wait lasts before it fails, unless the caller says otherwise (seconds).

A wait returns as soon as its condition holds, so this is a hang guard, not a bound on how
fast anything is: it is sized for CI's loaded machine (four workers on two shared cores),
where a UI round trip of 2-3 s of CPU took over 10 s. A test whose subject is time passes
its own timeout, far below the wait it must not take."""
Description = str | Callable[[], str]
"""What a wait is for: a text, or a callable that says it when the wait fails."""
_THREAD_POLL = 0.005
_PILOT_POLL = 0.01


def wait_until(
    first: Pilot | Callable[[], Any],
    predicate: Callable[[], Any] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    what: Description = "",
    interval: float | None = None,
) -> Any:
    """Wait until the predicate is truthy and return its value; fail after `timeout` s.

    `wait_until(predicate)` blocks this thread; `await wait_until(pilot, predicate)` pumps
    the app under test between polls. `what` names the condition in the failure message
    (a callable is asked at the failure, e.g. for the screen as it was then). `interval`
    spaces the polls of a costly predicate (one that runs a process, say).
    """
    if isinstance(first, Pilot):
        if predicate is None:
            raise TypeError("wait_until(pilot, predicate): the predicate is missing")
        return _pumped(first, predicate, timeout, what, interval or _PILOT_POLL)
    if predicate is not None:
        raise TypeError("wait_until(predicate) takes one condition; pass a Pilot first")
    return _polled(first, timeout, what, interval or _THREAD_POLL)


def holds_for(predicate: Callable[[], Any], seconds: float) -> bool:
    """Whether `predicate` stays truthy for `seconds` (it is checked throughout)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(_THREAD_POLL)
    return bool(predicate())


def _polled(
    predicate: Callable[[], Any], timeout: float, what: Description, interval: float
) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(_timed_out(predicate, timeout, what))
        time.sleep(interval)
    return value


async def _pumped(
    pilot: Pilot, predicate: Callable[[], Any], timeout: float, what: Description, interval: float
) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(_timed_out(predicate, timeout, what))
        await pilot.pause(interval)
    # One more turn of the app, so what made the condition true is also on screen.
    await pilot.pause()
    return value


def _timed_out(predicate: Callable[[], Any], timeout: float, what: Description) -> str:
    described = what() if callable(what) else what
    return f"timed out after {timeout} s waiting for {described or predicate}"
