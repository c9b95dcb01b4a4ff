"""web_fetch connects to the address it checked, whatever name it is asked for (SPEC G3)."""

from __future__ import annotations

from ipaddress import IPv4Address

import pytest
from web_server import WebServer

from agent.web_fetch import _PinnedBackend, _Watch


@pytest.fixture
def web():
    server = WebServer().start()
    yield server
    server.stop()


def test_the_connection_goes_to_the_pinned_address_not_the_name(web):
    """G3 (no DNS rebinding): asked for a name that resolves nowhere, the backend still
    connects to the checked address; the name is left to the Host header and TLS."""
    watch = _Watch(deadline=float("inf"), cancel=None)
    try:
        backend = _PinnedBackend((IPv4Address("127.0.0.1"),), watch)
        stream = backend.connect_tcp("rebound.invalid", web.port, timeout=5)
        request = b"GET /data.json HTTP/1.1\r\nHost: rebound.invalid\r\nConnection: close\r\n\r\n"
        stream.write(request)
        answer = stream.read(4096, timeout=5)
        stream.close()
    finally:
        watch.close()
    assert answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200")
    assert web.paths == ["/data.json"]
