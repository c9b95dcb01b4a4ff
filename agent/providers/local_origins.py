"""Origins answered in this process, without a socket: transports every new client mounts.

The scripted model registers one here when it plays in-process (tests that are not about the
wire): the SDKs and httpx2 run as they do against a server, and only the bytes' way differs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx2


class LocalTransport(httpx2.BaseTransport):
    """A transport that answers in this process; one per client, as a connection pool is."""

    def hang_up(self) -> None:
        """Drop this client's replies in flight, as shutting its sockets down would (W4)."""
        raise NotImplementedError


_lock = threading.Lock()
_served: dict[str, Callable[[], LocalTransport]] = {}


def serve(origin: str, transport: Callable[[], LocalTransport]) -> None:
    """Answer `origin` (`http://host`) in this process: each new client gets `transport()`."""
    with _lock:
        _served[origin] = transport


def withdraw(origin: str) -> None:
    """Stop answering `origin` here (a client built later reaches for the network again)."""
    with _lock:
        _served.pop(origin, None)


def local_mounts() -> dict[str, LocalTransport]:
    """A fresh transport for each origin served here, as a new client's mounts."""
    with _lock:
        factories = list(_served.items())
    return {origin: make() for origin, make in factories}
