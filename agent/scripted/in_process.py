"""The scripted model in this process: the same script and bytes, with no connection or thread.

For tests that are not about the wire. The SDKs and httpx2 build and send their real
requests; the `ScriptTransport` every new client mounts for the server's origin answers them
on the caller's thread from the same `Exchange` the HTTP server writes to its sockets. Waits
(gates, delays) block the caller as a slow server's bytes would; a stop hangs up as a socket
shutdown does. Timeouts, TLS and TCP (stalls past the read timeout, half-closed connections)
need the HTTP server.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx2

from agent.providers import local_origins
from agent.scripted.exchange import Answer, Dropped, Exchange
from agent.scripted.script import Script
from agent.scripted.server import ScriptedServer


class InProcessScriptedServer(ScriptedServer):
    """A `ScriptedServer` whose origin (`http://127.0.0.1:PORT`) is answered in-process.

    The port is reserved by a socket that is bound and never listens: no other server can
    take it, and a client that reaches for the network anyway (one built before `start` or
    after `stop`) is refused, as by a stopped server. Being on 127.0.0.1 it is a local
    server to the config, as the HTTP one is.
    """

    def __init__(self, script: Script | None = None) -> None:
        self._reserved = socket.socket()
        self._reserved.bind(("127.0.0.1", 0))
        port = int(self._reserved.getsockname()[1])
        super().__init__(script, host="127.0.0.1", port=port, listen=False)
        self._origin = f"http://127.0.0.1:{port}"
        self._closed = False

    def start(self) -> InProcessScriptedServer:
        """Answer the origin for every client built from now on; returns self."""
        local_origins.serve(self._origin, lambda: ScriptTransport(self))
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop answering: replies waiting are dropped, later requests refused."""
        local_origins.withdraw(self._origin)
        with self._changed:
            self._closed = True
            self._stop.set()
            self._changed.notify_all()
        self._reserved.close()

    @property
    def stopped(self) -> bool:
        """Whether stop() was called."""
        return self._closed


class ScriptTransport(local_origins.LocalTransport):
    """One client's way to an in-process scripted server: each request is answered on the
    thread that sends it."""

    def __init__(self, server: InProcessScriptedServer) -> None:
        self._server = server
        self._hung_up = threading.Event()

    def hang_up(self) -> None:
        """Drop this client's replies in flight (a stop shutting its sockets down, W4)."""
        self._hung_up.set()
        self._server.wake()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """The server's answer to `request` as an httpx2 response streamed from the script."""
        server = self._server
        if server.stopped or self._hung_up.is_set():
            raise httpx2.ConnectError("scripted server: connection refused", request=request)
        stop, hung_up = server.epoch_stop, self._hung_up  # the script this request came for
        exchange = Exchange(server, lambda: stop.is_set() or hung_up.is_set())
        headers = {k.lower(): v for k, v in request.headers.items()}
        answer = exchange.answer(
            request.method, request.url.raw_path.decode(), headers, request.read()
        )
        try:
            if answer.hold is not None:
                answer.hold()
        except Dropped:
            raise httpx2.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            ) from None
        if answer.chunks is None:
            return httpx2.Response(
                answer.status, headers=_response_headers(answer), content=answer.body
            )
        body = _Body(answer.chunks, request)
        return httpx2.Response(answer.status, headers=_response_headers(answer), stream=body)


def _response_headers(answer: Answer) -> dict[str, str]:
    """The answer's headers, framed as the HTTP server frames them."""
    if answer.chunks is None:
        return {**answer.headers, "Content-Length": str(len(answer.body))}
    return {**answer.headers, "Transfer-Encoding": "chunked"}


class _Body(httpx2.SyncByteStream):
    """A streamed answer's chunks; a hang-up mid-way fails the read as a dropped peer does."""

    def __init__(self, chunks: Iterator[bytes], request: httpx2.Request) -> None:
        self._chunks = chunks
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._chunks
        except Dropped:
            raise httpx2.RemoteProtocolError(
                "peer closed connection without sending complete message body",
                request=self._request,
            ) from None

    def close(self) -> None:
        """Let go of the rest of the reply (a generator closed where it waits)."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
