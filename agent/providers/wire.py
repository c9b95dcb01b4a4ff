"""The reusable wire client (W1-W7): one cached SDK client per agent and wire, kept connections.

- `ClientSlot` caches ONE SDK client keyed by the effective client arguments (W1). A request
  checks it out as a `Lease`; only a request that produced a complete response returns it
  (W2); a concurrent request gets an untracked client closed around that request (W3).
- A stop from another thread aborts a lease: under the slot lock it checks that the lease was
  not released yet, shuts its sockets down (SHUT_RDWR) and marks it aborted, so the client is
  never kept; only the owning thread ever closes a client (W4-W6).
- `DrainingTransport` reads the small remainder of a finished body (the chunked terminator the
  SDKs leave unread after `[DONE]` / `message_stop`) before the response is closed, bounded in
  bytes and time, so the pool keeps the connection and streamed calls share one TCP+TLS
  connection.
- `client_sockets` walks the default pool, proxy-mounted transports and nested proxy
  connections (W7).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpcore2
import httpx2

from agent.httpx_compat import (
    client_transports,
    environment_proxies,
    inner_connection,
    inner_stream,
    network_stream,
    pool_connections,
    set_network_backend,
    wrap_body,
)
from agent.providers.local_origins import LocalTransport, local_mounts
from agent.providers.sdk_compat import sdk_http_client

log = logging.getLogger("hermes_tui.wire")

DRAIN_MAX_BYTES = 64 * 1024
DRAIN_MAX_SECONDS = 0.5
COMPLETE_REASONS = ("request_complete", "stream_request_complete")

# -- one TLS context ----------------------------------------------------------------------------

_tls_lock = threading.Lock()
_tls_contexts: dict[str, ssl.SSLContext] = {}


def new_tls_context(ca_file: str | None = None) -> ssl.SSLContext:
    """A new client TLS context: the system trust store, plus `ca_file` when given.

    Loading the trust store (~150 roots) is what makes a context slow to build; this is the
    one recipe, used once per `ca_file` by `tls_context` (and per call by the wire bench's
    fresh-client variant, so both trust the same roots).
    """
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def tls_context(ca_file: str | None = None) -> ssl.SSLContext:
    """The process-wide client TLS context: system trust store, plus `ca_file` when given.

    Building a client with a ready context costs well under a millisecond; loading the trust
    store is what is slow, so every client the slots build shares this one (W1).
    """
    key = ca_file or ""
    with _tls_lock:
        context = _tls_contexts.get(key)
        if context is None:
            context = _tls_contexts[key] = new_tls_context(ca_file)
        return context


# -- kept connections: drain the remainder of a finished body -----------------------------------


class _DrainStream(httpcore2.NetworkStream):
    """A network stream whose reads can be bounded by a deadline (for the drain only)."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner
        self.deadline: float | None = None

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        deadline = self.deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise httpcore2.ReadTimeout("drain deadline passed")  # pragma: no mutate (unread)
            timeout = left if timeout is None else min(timeout, left)
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> _DrainStream:
        return _DrainStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DrainBackend(httpcore2.NetworkBackend):
    """The sync network backend, with every stream wrapped in a `_DrainStream`."""

    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> _DrainStream:
        return _DrainStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> _DrainStream:
        return _DrainStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _DrainingBody(httpx2.SyncByteStream):
    """A response body that, closed before its end, reads the small rest so the pool keeps it."""

    def __init__(self, inner: Any, network_stream: Any) -> None:
        self._inner = inner
        self._net = network_stream
        self._it: Iterator[bytes] | None = None
        self._done = False
        self.skip_drain = False

    def __iter__(self) -> Iterator[bytes]:
        self._it = iter(self._inner)
        # Not `yield from`: closing this generator must not close the inner one (drain).
        for chunk in self._it:  # noqa: UP028
            yield chunk
        self._done = True  # pragma: no mutate (saves a drain, which would find nothing left)

    def close(self) -> None:
        try:
            if not self._done and not self.skip_drain and self._it is not None:
                self._drain()
        finally:
            self._inner.close()

    def _drain(self) -> None:
        net = self._net
        if not isinstance(net, _DrainStream) or self._it is None:
            return
        net.deadline = time.monotonic() + DRAIN_MAX_SECONDS
        total = 0
        try:
            for chunk in self._it:
                total += len(chunk)
                if total > DRAIN_MAX_BYTES:
                    log.debug("drain: more than %d bytes left; connection dropped", total)
                    return
            self._done = True
        except Exception as exc:
            log.debug("drain: %s; connection dropped", type(exc).__name__)
        finally:
            net.deadline = None


class DrainingTransport(httpx2.HTTPTransport):
    """httpx2's transport with drained bodies (kept connections) and a shared TLS context.

    Requests go out as headers then body; httpcore2 sets TCP_NODELAY on every socket, so the
    body never waits on a delayed ACK (a test checks the option on the socket).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        set_network_backend(self, _DrainBackend())

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        network = response.extensions.get("network_stream")
        wrap_body(response, lambda body: _DrainingBody(body, network))
        return response


def abandon(response: Any) -> None:
    """Do not drain this response's body when it is closed (an error or abort unwinds)."""
    stream = getattr(response, "stream", None)
    # httpx2 wraps the transport's body (BoundSyncStream): look through the wrappers.
    for _ in range(4):
        if stream is None or isinstance(stream, _DrainingBody):
            break
        stream = inner_stream(stream)
    if isinstance(stream, _DrainingBody):
        stream.skip_drain = True


def build_http_client(
    *, timeout: Any, ca_file: str | None = None, proxies: bool = True
) -> httpx2.Client:
    """An httpx2 client on draining transports, honouring HTTP(S)_PROXY like httpx2 does."""
    context = tls_context(ca_file)
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=60)
    mounts: dict[str, Any] = {}
    if proxies:
        for pattern, url in environment_proxies().items():
            # None: a NO_PROXY host, reached without the proxy.
            mounts[pattern] = (
                None if url is None else DrainingTransport(verify=context, limits=limits, proxy=url)
            )
    # Origins answered in this process (the scripted model in tests) win over any proxy.
    mounts.update(local_mounts())
    # The TLS context is ours, so the environment (SSL_CERT_FILE...) has no say in it.
    return httpx2.Client(
        transport=DrainingTransport(verify=context, limits=limits),
        mounts=mounts,
        timeout=timeout,
        follow_redirects=True,
    )


# -- the socket walk (W7) --------------------------------------------------------------------


def _walk_connection(conn: Any, out: list[socket.socket], depth: int) -> None:
    if conn is None or depth > 8:
        return
    stream = network_stream(conn)
    if stream is not None:
        try:
            sock = stream.get_extra_info("socket")
        except Exception:
            sock = None
        if sock is not None and all(sock is not s for s in out):
            out.append(sock)
    # HTTPConnection, proxy tunnels, forwarders. The depth bound ends a cycle too.
    _walk_connection(inner_connection(conn), out, depth + 1)


def client_sockets(client: Any) -> list[socket.socket]:
    """Every socket of a client: default pool, proxy mounts, nested proxy connections (W7)."""
    transports = client_transports(sdk_http_client(client))
    out: list[socket.socket] = []
    for transport in transports:
        try:
            connections = pool_connections(transport)
        except Exception:  # no pool (a None mount of a NO_PROXY host), or one torn down
            connections = []
        for conn in connections:
            _walk_connection(conn, out, 0)
    return out


def shutdown_sockets(client: Any, why: str) -> int:
    """shutdown(SHUT_RDWR) every socket of `client` (safe from any thread); returns the count.

    The file descriptors stay open: the thread that owns the client closes it (W4).
    """
    sockets = client_sockets(client)
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    local = [t for t in client_transports(sdk_http_client(client)) if isinstance(t, LocalTransport)]
    for transport in local:
        transport.hang_up()
    if not sockets and not local:
        log.warning("wire abort (%s): found no socket to shut down", why)
    else:
        log.debug("wire abort (%s): shut down %d socket(s)", why, len(sockets))
    return len(sockets)


# -- the slot --------------------------------------------------------------------------------


def client_key(kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """A hashable key of the effective client arguments (key, URL, headers, timeouts...)."""

    def freeze(value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
        if isinstance(value, (list, tuple)):
            return tuple(freeze(v) for v in value)
        if isinstance(value, httpx2.Timeout):
            return ("timeout", value.connect, value.read, value.write, value.pool)
        return value

    return tuple(sorted((str(k), freeze(v)) for k, v in kwargs.items()))


class Lease:
    """One request's hold on a client: tracked (the slot's) or untracked (its own)."""

    def __init__(self, slot: ClientSlot, client: Any, tracked: bool) -> None:
        self.slot = slot
        self.client = client
        self.tracked = tracked
        self.owner = threading.get_ident()
        self.aborted = False  # a stop shut its sockets down: never kept (W4)
        self.poisoned = False
        self.released = False

    def abort(self, why: str = "stop") -> None:
        """Shut this lease's sockets down from any thread (a no-op once it was released)."""
        self.slot.abort(self, why)

    def poison(self) -> None:
        """Never return this client to the slot (e.g. its stream failed to close)."""
        self.poisoned = True

    def release(self, reason: str) -> None:
        """End the request on its own thread: keep the client or really close it."""
        self.slot.release(self, reason)


class ClientSlot:
    """One cached SDK client per agent and wire (W1-W6).

    `build(kwargs)` makes an SDK client; the slot never calls `close()` on a client from a
    thread other than the one that checked it out (or, when idle, the caller).
    """

    def __init__(self, name: str, build: Callable[[dict[str, Any]], Any]) -> None:
        self.name = name
        self._build = build
        self._lock = threading.Lock()
        self._client: Any = None
        self._key: tuple[Any, ...] | None = None
        self._holder: Lease | None = None
        self.builds = 0
        self.untracked = 0
        # Test seam for the W4 barrier test: called under the lock after the holder is read.
        self.on_holder_read: Callable[[Lease], None] | None = None

    @property
    def cached(self) -> Any:
        """The cached client (idle or checked out), or None."""
        return self._client

    def _make(self, kwargs: dict[str, Any]) -> Any:
        client = self._build(kwargs)
        with self._lock:
            self.builds += 1
        return client

    def checkout(self, kwargs: dict[str, Any]) -> Lease:
        """The cached client when the effective arguments match; else a rebuilt one (W1).

        While the slot is checked out, the caller gets an untracked client (W3).
        """
        key = client_key(kwargs)
        stale: Any = None
        with self._lock:
            if self._holder is not None:
                self.untracked += 1
                lease = None
            else:
                # An aborted or poisoned client never gets here: its release dropped it.
                if self._client is not None and self._key != key:
                    stale = self._client
                    self._client = self._key = None
                lease = Lease(self, self._client, tracked=True)
                self._holder = lease
        if stale is not None:
            self._close(stale, "key_changed")
        if lease is None:
            log.debug("wire %s: slot busy; untracked client for a concurrent request", self.name)
            return Lease(self, self._make(kwargs), tracked=False)
        if lease.client is None:
            client = self._make(kwargs)
            with self._lock:
                lease.client = client
                if self._holder is lease:  # not when close() or a stranger's release let go
                    self._client, self._key = client, key
                aborted = lease.aborted
            if aborted:
                shutdown_sockets(client, "abort before send")
            why = "key_changed" if stale is not None else "first use"  # pragma: no mutate (log)
            log.debug("wire %s: built client (%s)", self.name, why)
        return lease

    def abort(self, lease: Lease, why: str = "stop") -> None:
        """Abort a lease from any thread: the released check and the shutdown under one lock,
        so a late abort never reaches the client a later request checked out (W4). The
        aborted lease is never kept: its owner's release closes the client."""
        with self._lock:
            if self.on_holder_read is not None:
                self.on_holder_read(lease)
            if lease.released:
                log.debug("wire %s: late abort (%s) after release: ignored", self.name, why)
                return
            lease.aborted = True
            if lease.client is not None:
                shutdown_sockets(lease.client, why)

    def release(self, lease: Lease, reason: str) -> None:
        """Return the client (a complete response) or really close it (an error unwind) (W2).

        Must be called by the thread that checked the lease out: it alone closes clients.
        """
        if lease.owner != threading.get_ident():
            # A stranger thread (a generator finalised elsewhere) must not close it: abort the
            # sockets and detach; the file descriptors go with the client's garbage collection.
            log.warning("wire %s: release from a stranger thread; detaching", self.name)
            with self._lock:
                lease.released = True
                if self._holder is lease:
                    self._holder = None
                if self._client is lease.client:
                    self._client = self._key = None
            if lease.client is not None:
                shutdown_sockets(lease.client, "stranger release")
            return
        keep = reason in COMPLETE_REASONS
        with self._lock:
            if lease.released:
                return
            lease.released = True
            if self._holder is lease:
                self._holder = None
            # close() marks the lease it lets go of aborted, so that one is closed here too.
            bad = lease.aborted or lease.poisoned or not lease.tracked
            close = bad or not keep
            if close and self._client is lease.client:
                self._client = self._key = None
        # pragma: no mutate start (the text of a debug log)
        tag = "closed" if close else "kept"
        if lease.aborted:
            tag += ", poisoned by abort"
        elif lease.poisoned:
            tag += ", poisoned"
        # pragma: no mutate end
        log.debug("wire %s: %s (%s)", self.name, reason, tag)
        if close and lease.client is not None:
            self._close(lease.client, reason)

    def close(self, why: str = "close") -> None:
        """Close the cached client when idle; when checked out, abort its sockets and detach
        it, leaving the file descriptors to the owning thread (W6)."""
        idle: Any = None
        with self._lock:
            holder = self._holder
            if holder is not None:
                holder.aborted = True
                if holder.client is not None:
                    shutdown_sockets(holder.client, why)
            elif self._client is not None:
                idle = self._client
            self._client = self._key = None
            self._holder = None
        if idle is not None:
            self._close(idle, why)

    def _close(self, client: Any, reason: str) -> None:
        try:
            client.close()
        except Exception as exc:  # a close that fails must not break the caller
            log.debug("wire %s: close after %s failed: %s", self.name, reason, exc)
