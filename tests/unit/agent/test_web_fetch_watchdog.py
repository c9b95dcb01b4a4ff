"""web_fetch's watchdog (SPEC G3, H6): a server that sends its headers and then trickles a
byte at a time cannot hold a fetch past its deadline, nor a stop for more than a moment."""

from __future__ import annotations

import threading
import time

import pytest
from waits import wait_until
from web_server import WebServer

from agent.web_fetch import FetchRefused, Limits, fetch

ALLOW = ("127.0.0.1",)
MOMENT = 10.0
"""How long after its deadline or a stop a fetch may still run, on a loaded machine: what
it must not wait for (the next byte, a deadline) is a minute off, or never comes."""


@pytest.fixture
def web():
    server = WebServer().start()
    yield server
    server.stop()  # a trickling route ends too, so a fetch the test gave up on ends


class Fetching:
    """One fetch on a thread of its own, so a test bounds how long it waits for it."""

    def __init__(self, url: str, **options) -> None:
        self.outcome: list[object] = []
        self._thread = threading.Thread(target=self._run, args=(url, options), daemon=True)
        self._thread.start()

    def _run(self, url: str, options: dict) -> None:
        try:
            self.outcome.append(fetch(url, allow=ALLOW, **options))
        except BaseException as exc:  # the test reads it
            self.outcome.append(exc)

    def ended_within(self, seconds: float) -> bool:
        """Whether the fetch ended within `seconds` from now."""
        self._thread.join(seconds)
        return not self._thread.is_alive()


def test_g3_a_trickling_page_ends_at_the_deadline(web):
    """G3: a byte every 0.3 s keeps every read alive; the fetch still ends at its 1.5 s
    deadline, in one sentence that says so."""
    started = time.monotonic()
    fetching = Fetching(web.url("/trickle"), limits=Limits(total_seconds=1.5))
    assert fetching.ended_within(1.5 + MOMENT), "the fetch ran past its deadline"
    elapsed = time.monotonic() - started
    [error] = fetching.outcome
    assert isinstance(error, FetchRefused) and "took longer than its time limit" in str(error)
    assert elapsed >= 1.5


def test_g3_a_stop_ends_a_trickling_fetch_within_a_moment(web):
    """G3: a stop while the page trickles (a byte every 60 s, the deadline 60 s off) ends the
    fetch within a moment: the watchdog shuts its socket, no byte has to arrive first."""
    cancel = threading.Event()
    fetching = Fetching(web.url("/trickle-slow"), cancel=cancel, limits=Limits(total_seconds=60))
    wait_until(web.trickling.is_set, timeout=10, what="the page's headers sent")
    cancel.set()
    assert fetching.ended_within(MOMENT), "the fetch did not end within a moment of the stop"
    [error] = fetching.outcome
    assert isinstance(error, FetchRefused) and "stopped" in str(error)
