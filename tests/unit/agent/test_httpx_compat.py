"""Each of agent/httpx_compat.py's touches of httpx2's and httpcore2's internals still holds.

Real clients against the scripted server on loopback. A failure here names the compat
function that an httpx2 or httpcore2 upgrade broke; the rest of the code reaches these
internals only through it (test_compat_seams.py). W1 (kept connections), W7 (the socket walk).
"""

from __future__ import annotations

import socket

import httpcore2
import httpx2
import pytest

from agent import httpx_compat as compat
from agent.scripted import Script, ScriptedServer


@pytest.fixture
def server():
    started = ScriptedServer(Script.from_dict({"loop": True, "replies": [{"text": "hi"}]}))
    started.start()
    yield started
    started.stop()


class CountingBackend(httpcore2.NetworkBackend):
    """The sync backend, counting the connections it opens."""

    def __init__(self) -> None:
        self.inner = httpcore2.SyncBackend()
        self.opened = 0

    def connect_tcp(self, *args, **kwargs):
        self.opened += 1
        return self.inner.connect_tcp(*args, **kwargs)


def _get(client: httpx2.Client, server: ScriptedServer) -> httpx2.Response:
    return client.get(server.openai_base_url + "/models")


def test_set_network_backend_opens_connections_through_it(server):
    backend = CountingBackend()
    transport = httpx2.HTTPTransport()
    compat.set_network_backend(transport, backend)
    with httpx2.Client(transport=transport) as client:
        _get(client, server)
    assert backend.opened == 1, "httpx2 ignored the backend: fix httpx_compat.set_network_backend"


def test_wrap_body_replaces_what_reading_the_response_iterates(server):
    seen = []

    class Wrapped(httpx2.SyncByteStream):
        def __init__(self, inner):
            self.inner = inner

        def __iter__(self):
            for chunk in self.inner:
                seen.append(chunk)
                yield chunk

        def close(self):
            self.inner.close()

    class Transport(httpx2.HTTPTransport):
        def handle_request(self, request):
            response = super().handle_request(request)
            compat.wrap_body(response, Wrapped)
            return response

    client = httpx2.Client(transport=Transport())
    with client, client.stream("GET", server.openai_base_url + "/models") as response:
        body = response.read()
        wrapper = compat.inner_stream(response.stream)
    assert seen and b"".join(seen) == body, (
        "the body was not read through the wrapper: fix httpx_compat.wrap_body"
    )
    assert isinstance(wrapper, Wrapped), (
        "httpx2 wraps a transport's body differently: fix httpx_compat.inner_stream"
    )


def test_environment_proxies_reads_the_proxy_variables(monkeypatch):
    from httpx2._utils import get_environment_proxies  # noqa: F401 (fails if it moved)

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost")
    proxies = compat.environment_proxies()
    assert proxies.get("https://") == "http://127.0.0.1:9", (
        "httpx2 reads the environment's proxies differently: fix httpx_compat.environment_proxies"
    )
    assert None in proxies.values()  # NO_PROXY: reached directly


def test_client_transports_and_the_socket_walk_reach_a_live_socket(server):
    proxy = httpx2.HTTPTransport(proxy="http://127.0.0.1:9")
    default = httpx2.HTTPTransport()
    client = httpx2.Client(transport=default, mounts={"https://": proxy, "all://x": None})
    with client, client.stream("GET", server.openai_base_url + "/models") as response:
        response.read()
        transports = compat.client_transports(client)
        assert transports[0] is default and proxy in transports and None in transports, (
            "httpx2 keeps its transports elsewhere: fix httpx_compat.client_transports"
        )
        (connection,) = compat.pool_connections(default)
        assert compat.pool_connections(proxy) == [], "fix httpx_compat.pool_connections"
        # httpcore2's pool entry delegates to the HTTP/1.1 connection holding the socket.
        inner = compat.inner_connection(connection)
        assert inner is not None, "fix httpx_compat.inner_connection"
        stream = compat.network_stream(inner)
        assert stream is not None, "fix httpx_compat.network_stream"
        sock = stream.get_extra_info("socket")
        assert isinstance(sock, socket.socket)
        assert sock.getpeername()[1] == server.port
