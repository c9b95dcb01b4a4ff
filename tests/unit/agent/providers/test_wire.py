"""The wire client's slot, socket walk and kept connections (W1-W7), over stand-in clients.

A stand-in client has the shape the socket walk reads (an httpx2 client's `_transport._pool`
holding connections with a network stream and a socket) and records its closes and socket
shutdowns with the thread that did them, so every rule of the slot is checked without a
server. tests/integration/test_wire_slot.py holds the same rules over real TLS.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import httpcore2
import httpx2
import pytest

from agent.providers import wire
from agent.providers.sdk_compat import sdk_http_client
from agent.providers.wire import ClientSlot, client_key, client_sockets, shutdown_sockets


class FakeSocket:
    """Records shutdown(how) calls."""

    def __init__(self, fail: bool = False) -> None:
        self.shutdowns: list[int] = []
        self.fail = fail

    def shutdown(self, how: int) -> None:
        self.shutdowns.append(how)
        if self.fail:
            raise OSError("not connected")


class FakeStream:
    """An httpcore network stream: get_extra_info("socket") is its socket."""

    def __init__(self, sock: object) -> None:
        self.sock = sock

    def get_extra_info(self, info: str) -> object:
        if self.sock == "broken":
            raise RuntimeError("no info")
        return self.sock if info == "socket" else None


class FakeConnection:
    """A pooled connection: maybe a network stream, maybe an inner (proxied) connection."""

    def __init__(self, sock: object = None, inner: object = None) -> None:
        self._network_stream = None if sock is None else FakeStream(sock)
        self._connection = inner


class FakePool:
    def __init__(self, connections) -> None:
        self.connections = connections


class FakeTransport:
    def __init__(self, connections=()) -> None:
        self._pool = FakePool(list(connections))


class FakeClient:
    """An SDK client stand-in with `sockets` on its default pool; closes are recorded."""

    def __init__(self, sockets: int = 1) -> None:
        self.sockets = [FakeSocket() for _ in range(sockets)]
        self._transport = FakeTransport(FakeConnection(s) for s in self.sockets)
        self._mounts: dict[str, object] = {}
        self.closed_by: list[int] = []

    def close(self) -> None:
        self.closed_by.append(threading.get_ident())

    @property
    def shut(self) -> bool:
        """Whether every socket was shut down for reading and writing."""
        return all(s.shutdowns == [socket.SHUT_RDWR] for s in self.sockets)

    @property
    def untouched(self) -> bool:
        return not self.closed_by and all(not s.shutdowns for s in self.sockets)


def make_slot() -> tuple[ClientSlot, list[FakeClient]]:
    built: list[FakeClient] = []

    def build(kwargs):
        client = FakeClient(kwargs.get("sockets", 1))
        built.append(client)
        return client

    return ClientSlot("test/openai", build), built


KW = {"api_key": "k1"}
ME = threading.get_ident()


def on_thread(fn, *args):
    """Run fn(*args) on another thread (a stranger to the leases of this one) and wait."""
    errors: list[BaseException] = []

    def run():
        try:
            fn(*args)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and not errors, errors


# -- W1/W2: one cached client, kept only after a complete response ------------------------------


def test_w1_the_same_arguments_reuse_one_client_and_a_change_rebuilds():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    assert lease.tracked and slot.cached is lease.client
    lease.release("stream_request_complete")
    again = slot.checkout({"api_key": "k1"})
    assert again.client is built[0] and slot.builds == 1
    again.release("request_complete")
    assert slot.cached is built[0] and built[0].untouched
    rotated = slot.checkout({"api_key": "k2"})  # key rotation: close the old, build a new one
    assert built[0].closed_by == [ME] and rotated.client is built[1]
    assert slot.builds == 2 and slot.cached is built[1]
    rotated.release("stream_request_complete")
    assert slot.cached is built[1] and not built[1].closed_by


@pytest.mark.parametrize("reason", ["request_error_cleanup", "stream_error_cleanup"])
def test_w2_a_request_that_unwinds_really_closes_its_client(reason):
    slot, built = make_slot()
    slot.checkout(KW).release(reason)
    assert built[0].closed_by == [ME] and slot.cached is None
    lease = slot.checkout(KW)
    assert lease.client is built[1] and slot.builds == 2  # a fresh pool for the retry


def test_w2_a_poisoned_lease_is_closed_and_never_kept():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    lease.poison()
    lease.release("stream_request_complete")
    assert built[0].closed_by == [ME] and slot.cached is None
    assert slot.checkout(KW).client is built[1]


def test_w2_a_second_release_is_a_no_op():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    lease.release("stream_error_cleanup")
    lease.release("stream_error_cleanup")
    assert built[0].closed_by == [ME]


# -- W3: one checked-out slot ---------------------------------------------------------------


def test_w3_a_concurrent_request_gets_an_untracked_client_closed_after_it():
    slot, built = make_slot()
    held = slot.checkout(KW)
    other = slot.checkout(KW)
    assert not other.tracked and other.client is built[1] and slot.untracked == 1
    assert slot.cached is held.client
    other.release("stream_request_complete")  # complete, but never kept: it is untracked
    assert built[1].closed_by == [ME] and slot.cached is held.client
    held.release("stream_request_complete")
    assert slot.cached is held.client and not built[0].closed_by
    assert slot.checkout(KW).tracked and slot.untracked == 1


def test_w3_every_concurrent_request_is_counted():
    slot, built = make_slot()
    held = slot.checkout(KW)
    others = [slot.checkout(KW) for _ in range(3)]
    assert slot.untracked == 3 and not any(o.tracked for o in others)
    assert len({id(o.client) for o in others}) == 3 and held.client is built[0]


def test_w3_an_abort_of_an_untracked_lease_leaves_the_slot_alone():
    slot, built = make_slot()
    held = slot.checkout(KW)
    other = slot.checkout(KW)
    on_thread(other.abort, "stop")
    assert built[1].shut and not any(s.shutdowns for s in built[0].sockets)
    other.release("stream_error_cleanup")
    held.release("stream_request_complete")
    assert slot.cached is built[0]  # not poisoned by the other request's abort


# -- W4: a stop from another thread --------------------------------------------------------------


def test_w4_a_stop_shuts_the_sockets_and_the_owner_closes_the_poisoned_client():
    slot, built = make_slot()
    lease = slot.checkout({"sockets": 2})
    on_thread(lease.abort, "stop")
    client = built[0]
    assert client.shut and not client.closed_by  # every socket; only the owner closes
    assert lease.aborted
    lease.release("stream_request_complete")  # even a complete response is not kept
    assert client.closed_by == [ME] and slot.cached is None
    assert slot.checkout({"sockets": 2}).client is built[1]


def test_w4_an_abort_after_the_client_was_kept_still_poisons_the_next_checkout():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    on_thread(lease.abort, "stop")
    # The abort raced the end of the response: the owner's release must not keep it.
    lease.release("request_complete")
    fresh = slot.checkout(KW)
    assert fresh.client is built[1] and built[0].closed_by == [ME]


def test_w4_a_truly_late_abort_after_release_never_touches_the_next_request():
    """The stop arrives after release(): the kept client now serves the next request, whose
    sockets the late abort must leave alone (and the slot must not be poisoned)."""
    slot, built = make_slot()
    first = slot.checkout(KW)
    first.release("stream_request_complete")
    second = slot.checkout(KW)
    assert second.client is first.client
    released = threading.Event()

    def late_stop():
        assert released.wait(5)  # the barrier: only once release() has returned
        first.abort("late stop")

    released.set()
    on_thread(late_stop)
    assert built[0].untouched and not second.aborted
    second.release("stream_request_complete")
    assert slot.cached is built[0] and slot.builds == 1


def test_w4_the_holder_is_read_under_the_slot_lock():
    slot, _ = make_slot()
    lease = slot.checkout(KW)
    seen = []

    def on_holder_read(read):
        seen.append((read, slot._lock.locked()))

    slot.on_holder_read = on_holder_read
    lease.abort("stop")
    assert seen == [(lease, True)]


def test_w4_an_abort_before_the_client_exists_shuts_it_down_once_built():
    """close() lands while the slot builds the request's client: its sockets are shut the
    moment it exists, and it is never cached."""
    built: list[FakeClient] = []
    slot: ClientSlot

    def build(kwargs):
        on_thread(slot.close, "close")  # another thread closes the agent meanwhile
        client = FakeClient()
        built.append(client)
        return client

    slot = ClientSlot("test/openai", build)
    lease = slot.checkout(KW)
    assert lease.client is built[0] and built[0].shut
    assert slot.cached is None and not built[0].closed_by
    lease.release("stream_request_complete")
    assert built[0].closed_by == [ME]


# -- W4/W6: release from a stranger thread ------------------------------------------------------


def test_w4_a_release_from_a_stranger_thread_detaches_and_never_closes(caplog):
    caplog.set_level(logging.WARNING, logger="hermes_tui.wire")
    slot, built = make_slot()
    lease = slot.checkout(KW)
    on_thread(lease.release, "stream_request_complete")
    client = built[0]
    assert client.shut and not client.closed_by  # sockets aborted, fds left to the GC
    assert lease.released
    assert slot.cached is None  # the aborted client is never handed out again
    assert any("stranger thread" in r.getMessage() for r in caplog.records)
    following = slot.checkout(KW)  # the slot is free again: a tracked, fresh client
    assert following.tracked and following.client is built[1] and slot.untracked == 0
    lease.release("stream_request_complete")  # the owner's own release: nothing more
    assert not client.closed_by
    following.release("stream_request_complete")
    assert slot.cached is built[1]


def test_w4_a_stranger_release_of_an_untracked_lease_keeps_the_slots_client():
    slot, built = make_slot()
    held = slot.checkout(KW)
    other = slot.checkout(KW)
    on_thread(other.release, "stream_request_complete")
    assert built[1].shut and slot.cached is built[0]
    assert not any(s.shutdowns for s in built[0].sockets)
    held.release("stream_request_complete")
    assert slot.cached is built[0]


# -- W6: close() ------------------------------------------------------------------------------


def test_w6_close_when_idle_closes_the_client():
    slot, built = make_slot()
    slot.checkout(KW).release("stream_request_complete")
    slot.close()
    assert built[0].closed_by == [ME] and slot.cached is None
    slot.close()  # idempotent
    assert built[0].closed_by == [ME]
    assert slot.checkout(KW).client is built[1]


def test_w6_close_when_checked_out_aborts_and_detaches():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    on_thread(slot.close, "close")
    client = built[0]
    assert client.shut and not client.closed_by and slot.cached is None
    assert lease.aborted  # so that its owner's release closes it, never keeps it
    following = slot.checkout(KW)  # the slot no longer waits for the detached request
    assert following.tracked and following.client is built[1]
    lease.release("stream_request_complete")
    assert client.closed_by == [ME]  # the owner closes the detached client
    concurrent = slot.checkout(KW)  # the detached release did not free the new holder's slot
    assert not concurrent.tracked and slot.untracked == 1
    concurrent.release("stream_request_complete")
    following.release("stream_request_complete")
    assert slot.cached is built[1]


def test_w6_a_poisoned_slot_rebuilds_after_close():
    slot, built = make_slot()
    lease = slot.checkout(KW)
    lease.abort("stop")
    slot.close()
    lease.release("stream_error_cleanup")
    assert slot.checkout(KW).client is built[1]
    assert slot.builds == 2


def test_a_client_whose_close_fails_does_not_break_the_caller(caplog):
    caplog.set_level(logging.DEBUG, logger="hermes_tui.wire")
    slot, built = make_slot()
    lease = slot.checkout(KW)

    def broken_close():
        raise RuntimeError("close failed")

    built[0].close = broken_close
    lease.release("stream_error_cleanup")
    assert slot.cached is None
    assert any("close after stream_error_cleanup failed" in r.getMessage() for r in caplog.records)


# -- W7: the socket walk ----------------------------------------------------------------------


def test_w7_the_walk_covers_mounts_nested_proxy_connections_and_every_socket():
    a, b, c, d = FakeSocket(), FakeSocket(), FakeSocket(), FakeSocket()
    client = FakeClient(0)
    client._transport = FakeTransport([FakeConnection(a), FakeConnection(b)])
    tunnel = FakeConnection(None, inner=FakeConnection(c, inner=FakeConnection(d)))
    client._mounts = {"https://": FakeTransport([tunnel]), "all://localhost": None}
    assert client_sockets(client) == [a, b, c, d]
    assert shutdown_sockets(client, "stop") == 4
    assert all(s.shutdowns == [socket.SHUT_RDWR] for s in (a, b, c, d))


def test_w7_the_walk_survives_odd_connections_and_finds_each_socket_once():
    sock, failing = FakeSocket(), FakeSocket(fail=True)
    loop = FakeConnection(sock)
    loop._connection = loop  # a connection that names itself as its inner one
    deep = FakeConnection(None)
    tail = deep
    for _ in range(20):  # deeper than any real proxy chain: the walk stops
        tail._connection = FakeConnection(None)
        tail = tail._connection
    tail._connection = FakeConnection(FakeSocket())

    class BrokenPool:
        @property
        def connections(self):
            raise RuntimeError("pool is gone")

    client = FakeClient(0)
    client._transport = FakeTransport([loop, FakeConnection(sock), FakeConnection("broken")])
    broken = FakeTransport()
    broken._pool = BrokenPool()
    client._mounts = {"a://": broken, "b://": FakeTransport([deep, FakeConnection(failing)])}
    assert client_sockets(client) == [sock, failing]
    assert shutdown_sockets(client, "stop") == 2  # a failing shutdown is not fatal
    assert failing.shutdowns == [socket.SHUT_RDWR]


def test_w7_a_proxy_with_no_proxy_hosts_keeps_the_walk_working(monkeypatch, caplog):
    """HTTPS_PROXY plus NO_PROXY: httpx2 mounts None for the excluded hosts."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    client = wire.build_http_client(timeout=httpx2.Timeout(5.0))
    try:
        assert None in client._mounts.values()
        (proxied,) = [t for t in client._mounts.values() if t is not None]
        assert isinstance(proxied, wire.DrainingTransport)
        assert proxied._pool._keepalive_expiry == 60
        assert proxied._pool._ssl_context is wire.tls_context()
        caplog.set_level(logging.WARNING, logger="hermes_tui.wire")
        assert client_sockets(client) == []
        assert shutdown_sockets(client, "stop") == 0
        assert [r.getMessage() for r in caplog.records] == [
            "wire abort (stop): found no socket to shut down"
        ]
    finally:
        client.close()


def test_w7_no_proxy_mounts_without_the_environment(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = wire.build_http_client(timeout=httpx2.Timeout(7.0, read=9.0), proxies=False)
    try:
        assert client._mounts == {}
        assert isinstance(client._transport, wire.DrainingTransport)
        assert (client.timeout.connect, client.timeout.read) == (7.0, 9.0)
        assert client.follow_redirects
        pool = client._transport._pool
        assert (pool._max_connections, pool._max_keepalive_connections) == (100, 20)
        assert pool._keepalive_expiry == 60
        assert pool._ssl_context is wire.tls_context()
    finally:
        client.close()


def test_w7_an_sdk_client_is_walked_through_its_http_client():
    http = wire.build_http_client(timeout=httpx2.Timeout(5.0), proxies=False)

    class SDK:
        _client = http

    try:
        assert sdk_http_client(SDK()) is http
        assert sdk_http_client(http) is http
    finally:
        http.close()


# -- W1: client keys and one TLS context --------------------------------------------------------


def test_w1_the_client_key_is_the_effective_arguments():
    base = {
        "api_key": "k",
        "default_headers": {"User-Agent": "u", "X-A": "1"},
        "timeout": httpx2.Timeout(60.0, connect=15.0, read=180.0),
        "stop": ["a", ("b", "c")],
    }
    same = {
        "stop": ["a", ("b", "c")],
        "timeout": httpx2.Timeout(60.0, connect=15.0, read=180.0),
        "default_headers": {"X-A": "1", "User-Agent": "u"},
        "api_key": "k",
    }
    assert client_key(base) == client_key(same)
    hash(client_key(base))
    for change in (
        {"api_key": "k2"},
        {"default_headers": {"User-Agent": "u", "X-A": "2"}},
        {"timeout": httpx2.Timeout(60.0, connect=15.0, read=10.0)},
        {"timeout": httpx2.Timeout(60.0, connect=5.0, read=180.0)},
        {"timeout": httpx2.Timeout(30.0, connect=15.0, read=180.0)},
        {"timeout": httpx2.Timeout(60.0, connect=15.0, read=180.0, pool=1.0)},
    ):
        assert client_key({**base, **change}) != client_key(base), change
    assert client_key({"stop": ["a"]}) != client_key({"stop": ["b"]})
    assert client_key({"h": {"a": ["x"]}}) != client_key({"h": {"a": ["y"]}})
    assert client_key({"t": httpx2.Timeout(1.0, connect=2.0, read=3.0, write=4.0)}) == (
        ("t", ("timeout", 2.0, 3.0, 4.0, 1.0)),
    )


def test_w1_rebuilds_share_one_tls_context_per_ca_file(tmp_path):
    assert wire.tls_context() is wire.tls_context(None) is wire.tls_context("")
    context = wire.new_tls_context()
    assert context is not wire.tls_context()
    assert context.verify_mode == wire.ssl.CERT_REQUIRED


# -- kept connections: the drain of a finished body ------------------------------------------


class Inner:
    """A network stream whose reads record the timeout they were given."""

    def __init__(self) -> None:
        self.reads: list[float | None] = []

    def read(self, max_bytes, timeout=None):
        self.reads.append(timeout)
        return b"x"


def test_a_drain_read_is_cut_to_the_drain_deadline():
    inner = Inner()
    stream = wire._DrainStream(inner)
    assert stream.read(10, 7.0) == b"x" and inner.reads == [7.0]  # no deadline: as asked
    stream.deadline = time.monotonic() + 0.5
    stream.read(10, 7.0)
    stream.read(10, None)
    stream.read(10, 0.1)
    assert 0 < inner.reads[1] <= 0.5 and 0 < inner.reads[2] <= 0.5 and inner.reads[3] == 0.1
    stream.deadline = time.monotonic() - 0.01
    with pytest.raises(httpcore2.ReadTimeout):
        stream.read(10, 7.0)
    assert len(inner.reads) == 4


class InnerBody:
    """The transport's body: its chunks from `make()` (a generator), closes recorded."""

    def __init__(self, make) -> None:
        self.make = make
        self.closed = False

    def __iter__(self):
        return self.make()

    def close(self) -> None:
        self.closed = True


def body(make, net=None) -> wire._DrainingBody:
    return wire._DrainingBody(InnerBody(make), net or wire._DrainStream(Inner()))


def chunks(*items):
    return lambda: iter(items)


def test_a_finished_body_is_not_drained_again():
    draining = body(chunks(b"a", b"b"))
    assert list(draining) == [b"a", b"b"]
    draining.close()
    assert draining._inner.closed


def test_a_body_closed_early_drains_its_small_rest_within_a_deadline():
    net = wire._DrainStream(Inner())
    deadlines = []

    def rest():
        yield b"a"
        deadlines.append(net.deadline)
        yield b"rest"
        deadlines.append(net.deadline)

    draining = body(rest, net)
    assert next(iter(draining)) == b"a"
    draining.close()
    assert draining._done and draining._inner.closed  # drained: the pool keeps it
    assert deadlines[0] is not None and deadlines[0] <= time.monotonic() + 0.5
    assert net.deadline is None  # the deadline is only for the drain


def test_a_body_closed_before_its_first_read_is_not_drained():
    draining = body(chunks(b"a"))
    draining.close()
    assert not draining._done and draining._inner.closed


def test_the_drain_of_a_body_closed_early_is_bounded_in_bytes(monkeypatch):
    monkeypatch.setattr(wire, "DRAIN_MAX_BYTES", 10)
    draining = body(chunks(b"a", b"01234", b"56789", b"!"))
    assert next(iter(draining)) == b"a"
    draining.close()
    assert not draining._done and draining._inner.closed  # too much left: dropped
    at_cap = body(chunks(b"a", b"01234", b"56789"))
    assert next(iter(at_cap)) == b"a"
    at_cap.close()
    assert at_cap._done  # exactly the cap is still drained


def test_a_body_on_another_network_stream_is_not_drained():
    draining = wire._DrainingBody(InnerBody(chunks(b"a", b"b")), object())
    assert next(iter(draining)) == b"a"
    draining.close()
    assert not draining._done and draining._inner.closed


def test_an_abandoned_body_is_never_drained():
    draining = body(chunks(b"a", b"b"))
    next(iter(draining))

    class Wrapper:
        def __init__(self, inner) -> None:
            self._stream = inner

    class Response:
        stream = Wrapper(Wrapper(draining))  # httpx2 wraps the transport's body

    wire.abandon(Response())
    assert draining.skip_drain
    draining.close()
    assert not draining._done and draining._inner.closed
    wire.abandon(object())  # no stream at all: nothing to do
    wire.abandon(type("Response", (), {"stream": object()})())  # a body that is not ours


def test_abandon_looks_through_at_most_four_wrappers():
    draining = body(chunks(b"a"))
    stream = draining
    for _ in range(5):
        stream = type("Wrapper", (), {"_stream": stream})()
    wire.abandon(type("Response", (), {"stream": stream})())
    assert not draining.skip_drain
    wire.abandon(type("Response", (), {"stream": stream._stream})())
    assert draining.skip_drain


def test_a_drain_that_fails_drops_the_connection_quietly():
    def failing():
        yield b"a"
        raise httpcore2.ReadTimeout("slow")

    draining = body(failing)
    assert next(iter(draining)) == b"a"
    draining.close()
    assert not draining._done and draining._net.deadline is None and draining._inner.closed


def chain(depth_of_socket: int, sock: FakeSocket) -> FakeConnection:
    """A connection whose socket sits `depth_of_socket` inner connections down."""
    conn = FakeConnection(sock)
    for _ in range(depth_of_socket):
        conn = FakeConnection(None, inner=conn)
    return conn


def test_w7_the_walk_goes_eight_proxy_levels_deep_and_no_further():
    deep, too_deep = FakeSocket(), FakeSocket()
    client = FakeClient(0)
    client._transport = FakeTransport([chain(8, deep), chain(9, too_deep)])
    assert client_sockets(client) == [deep]


def test_w7_a_client_without_pools_has_no_sockets():
    assert client_sockets(object()) == []
    client = FakeClient(0)
    client._transport = FakeTransport([FakeConnection(None)])
    client._transport._pool.connections = None
    assert client_sockets(client) == []


@pytest.mark.parametrize("how", ["stop", "close", "stranger", "before send"])
def test_w7_an_abort_that_finds_no_socket_says_which_abort(caplog, how):
    caplog.set_level(logging.WARNING, logger="hermes_tui.wire")
    slot: ClientSlot

    def build(kwargs):
        if how == "before send":
            on_thread(slot.close, "close")
        return FakeClient(0)

    slot = ClientSlot("test/openai", build)
    lease = slot.checkout(KW)
    if how == "stop":
        lease.abort()
    elif how == "close":
        slot.close()
    elif how == "stranger":
        on_thread(lease.release, "stream_request_complete")
    why = {"stop": "stop", "close": "close", "stranger": "stranger release"}.get(
        how, "abort before send"
    )
    assert f"wire abort ({why}): found no socket to shut down" in [
        r.getMessage() for r in caplog.records
    ]


# -- the network backend under the drain --------------------------------------------------


class Recorder:
    """Records every call made to it, and answers with a marker."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        def call(*args):
            self.calls.append((name, *args))
            return f"<{name}>"

        return call


def test_the_drain_backend_passes_every_argument_through():
    backend = wire._DrainBackend()
    inner = backend._inner = Recorder()
    options = [(1, 2, 3)]
    tcp = backend.connect_tcp("example.com", 443, 2.5, "10.0.0.1", options)
    unix = backend.connect_unix_socket("/run/s.sock", 1.5, options)
    backend.sleep(0.25)
    assert isinstance(tcp, wire._DrainStream) and tcp._inner == "<connect_tcp>"
    assert isinstance(unix, wire._DrainStream) and unix._inner == "<connect_unix_socket>"
    assert inner.calls == [
        ("connect_tcp", "example.com", 443, 2.5, "10.0.0.1", options),
        ("connect_unix_socket", "/run/s.sock", 1.5, options),
        ("sleep", 0.25),
    ]


def test_the_drain_stream_passes_every_call_through():
    inner = Recorder()
    stream = wire._DrainStream(inner)
    context = wire.tls_context()
    stream.write(b"data", 3.0)
    tls = stream.start_tls(context, "example.com", 4.0)
    assert stream.get_extra_info("socket") == "<get_extra_info>"
    stream.close()
    assert isinstance(tls, wire._DrainStream) and tls._inner == "<start_tls>"
    assert tls.deadline is None
    assert inner.calls == [
        ("write", b"data", 3.0),
        ("start_tls", context, "example.com", 4.0),
        ("get_extra_info", "socket"),
        ("close",),
    ]


def test_requests_go_out_without_nagle_on_the_drain_backend():
    from agent.scripted import Script, ScriptedServer

    server = ScriptedServer(Script.from_dict({"replies": [{"text": "ok"}]})).start()
    client = wire.build_http_client(timeout=httpx2.Timeout(5.0), proxies=False)
    try:
        client.post(server.openai_base_url + "/chat/completions", json={"model": "m"}).read()
        (sock,) = client_sockets(client)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        (conn,) = client._transport._pool.connections
        assert isinstance(conn._connection._network_stream, wire._DrainStream)
    finally:
        client.close()
        server.stop()


def test_the_tls_context_offers_http_1_1_by_alpn(tmp_path):
    """The server picks the protocol: it must find http/1.1 among the client's offers."""
    from agent.scripted.certs import OpenSSLMissing, self_signed_cert

    try:
        certfile, keyfile = self_signed_cert(tmp_path)
    except OpenSSLMissing:
        pytest.skip("openssl is not available")
    server_context = wire.ssl.SSLContext(wire.ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(certfile, keyfile)
    server_context.set_alpn_protocols(["h2", "http/1.1"])
    client_context = wire.new_tls_context(certfile)
    assert client_context is not wire.tls_context(certfile)
    assert wire.tls_context(certfile) is wire.tls_context(certfile)
    assert wire.tls_context(certfile) is not wire.tls_context()
    left, right = socket.socketpair()
    chosen: list[str | None] = []

    def serve():
        with server_context.wrap_socket(right, server_side=True) as tls:
            chosen.append(tls.selected_alpn_protocol())

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client_context.wrap_socket(left, server_hostname="127.0.0.1") as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"
    finally:
        thread.join(10)
    assert chosen == ["http/1.1"]
