"""Every use of httpx2's and httpcore2's internals, in one place, each with why.

The wire client keeps connections alive (drained bodies), walks its sockets to abort a call
from another thread (W7) and honours the proxy variables as httpx2 does; none of that has a
public API. Each function names the private it relies on, and
tests/unit/agent/test_httpx_compat.py checks each against the installed httpx2 and
httpcore2, so an upgrade that breaks one fails there, naming the function to fix.
tests/unit/architecture/test_compat_seams.py keeps every other module off their privates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2


def set_network_backend(transport: httpx2.HTTPTransport, backend: Any) -> None:
    """Make `transport` open its connections through `backend` (an httpcore2 NetworkBackend).

    Uses `HTTPTransport._pool` (its httpcore2 ConnectionPool) and the pool's
    `_network_backend`: httpx2 builds the pool itself and takes no backend argument.
    """
    transport._pool._network_backend = backend


def wrap_body(response: httpx2.Response, wrapper: Callable[[Any], Any]) -> None:
    """Put `wrapper(body)` in place of a response's unread body stream.

    Relies on `Response.stream` being the body that reading the response iterates, and on
    a transport (or a response hook) being allowed to replace it before anything is read.
    """
    response.stream = wrapper(response.stream)


def inner_stream(stream: Any) -> Any:
    """The body stream a wrapper of httpx2's (BoundSyncStream) wraps, or None.

    Uses the wrappers' `_stream` attribute: the body a transport returned sits under them.
    """
    return getattr(stream, "_stream", None)


def environment_proxies() -> dict[str, str | None]:
    """The proxies the environment asks for (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), as httpx2
    reads them: mount pattern -> proxy URL, or None for a host reached directly.

    Uses `httpx2._utils.get_environment_proxies`: a client given its own transport (ours)
    ignores the environment, so the mounts are built from what httpx2 itself would read.
    Without it (a layout change) no proxy is used rather than no call working; the compat
    test fails on such a change.
    """
    try:
        from httpx2._utils import get_environment_proxies
    except ImportError:  # pragma: no cover - layout change in httpx2 (the compat test fails)
        return {}
    return get_environment_proxies()


def client_transports(client: httpx2.Client) -> list[Any]:
    """Every transport of `client`: the default one, then each mount's (None for a
    NO_PROXY host).

    Uses `Client._transport` and `Client._mounts`: the abort walks all of them (W7).
    """
    transports = [getattr(client, "_transport", None)]
    transports += list((getattr(client, "_mounts", None) or {}).values())
    return transports


def pool_connections(transport: Any) -> list[Any]:
    """The httpcore2 connections a transport holds open now.

    Uses `HTTPTransport._pool` (the pool's `connections` list is public).
    """
    return list(transport._pool.connections)


def network_stream(connection: Any) -> Any:
    """The network stream (socket) under an httpcore2 connection, or None before it connects.

    Uses `_network_stream` of httpcore2's HTTP/1.1 and HTTP/2 connections.
    """
    return getattr(connection, "_network_stream", None)


def inner_connection(connection: Any) -> Any:
    """The connection an httpcore2 connection or proxy tunnel delegates to, or None.

    Uses `_connection` of httpcore2's HTTPConnection, tunnel and forward-proxy connections.
    """
    return getattr(connection, "_connection", None)
