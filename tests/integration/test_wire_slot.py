"""The reusable wire client (W1-W7) over real TLS against the scripted server, on both wires."""

from __future__ import annotations

import gc
import logging
import os
import queue
import select
import socket
import subprocess
import sys
import threading
import time

import pytest
from waits import wait_until

from agent.config import ProviderConfig
from agent.messages import Message
from agent.providers import wire
from agent.providers.base import Abort, ChatRequest, TextPart
from agent.providers.errors import ProviderError
from agent.providers.factory import make_provider
from agent.providers.sdk_compat import sdk_http_client
from agent.scripted import Script, ScriptedServer

KEY = "sk-wire-test-key-0123456789"
WIRES = ("openai", "anthropic")


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (its own CA), made with the openssl CLI."""
    from agent.scripted.certs import OpenSSLMissing, self_signed_cert

    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except OpenSSLMissing:
        pytest.skip("openssl is not available")


@pytest.fixture
def serve(tls_cert):
    """serve(script_dict) -> a started TLS scripted server, stopped at teardown."""
    servers = []

    def _serve(script):
        server = ScriptedServer(
            Script.from_dict(script), certfile=tls_cert[0], keyfile=tls_cert[1]
        ).start()
        servers.append(server)
        return server

    yield _serve
    for server in servers:
        server.stop()


@pytest.fixture
def providers():
    made = []
    yield made
    for provider in made:
        provider.close()


IDLE_TIMEOUT = 60.0
PROMPTLY = 15.0
"""How soon an abort or a bounded drain ends a read that would otherwise last a minute."""


def make(server, wire_name, tls_cert, providers, **extra):
    base = server.openai_base_url if wire_name == "openai" else server.anthropic_base_url
    config = ProviderConfig(
        name="scripted", kind=wire_name, base_url=base, api_key=KEY, ca_file=tls_cert[0], **extra
    )
    # A minute: an abort that failed to break a held read would wait that long (and fail),
    # so the bounds below, a quarter of it, prove the abort on a loaded machine too.
    provider = make_provider(config, idle_timeout=IDLE_TIMEOUT)
    providers.append(provider)
    return provider


def request(**kw):
    return ChatRequest(model="m", messages=[Message("user", "hi")], **kw)


def call(provider, abort=None, **kw):
    return list(provider.stream(request(**kw), abort or Abort()))


def text_of(parts):
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def record_closes(provider):
    """Wrap the slot's builder so every client records the threads that closed it."""
    closes = []
    build = provider.slot._build

    def _build(kwargs):
        client = build(kwargs)
        original = client.close

        def close():
            closes.append((client, threading.get_ident()))
            original()

        client.close = close
        return client

    provider.slot._build = _build
    return closes


class Worker:
    """Runs one stream on its own thread; `first` is set when the first part arrived."""

    def __init__(self, provider, abort=None, **kw):
        self.abort = abort or Abort()
        self.first = threading.Event()
        self.parts = []
        self.error = None
        self.ident = None
        self.thread = threading.Thread(target=self._run, args=(provider, kw), daemon=True)
        self.thread.start()

    def _run(self, provider, kw):
        self.ident = threading.get_ident()
        try:
            for part in provider.stream(request(**kw), self.abort):
                self.parts.append(part)
                self.first.set()
        except ProviderError as exc:
            self.error = exc
        finally:
            self.first.set()

    def join(self):
        self.thread.join(IDLE_TIMEOUT + 10)
        assert not self.thread.is_alive()


GATED = {
    "text": "first part, then the rest of a longer answer held at the gate",
    "chunk_size": 8,
    "gate": "g",
    "gate_after": 5,
}


# -- W1: one cached client, kept connections ----------------------------------------------------


@pytest.mark.parametrize("wire_name", WIRES)
def test_n_streamed_calls_share_one_tls_connection(serve, tls_cert, providers, wire_name):
    server = serve({"loop": True, "replies": [{"text": "hello from the slot", "chunk_size": 4}]})
    provider = make(server, wire_name, tls_cert, providers)
    for _ in range(10):
        assert text_of(call(provider)) == "hello from the slot"
    assert server.connections_accepted == 1
    assert provider.slot.builds == 1


@pytest.mark.parametrize("wire_name", WIRES)
def test_drain_is_bounded_in_time(serve, tls_cert, providers, wire_name, monkeypatch):
    # The server sends every event, then withholds the chunked terminator for a minute.
    from agent.scripted import wire_anthropic, wire_openai
    from agent.scripted.script import Reply, RequestInfo

    reply = Reply(text="hi", chunk_size=50)
    info = RequestInfo(wire=wire_name, stream=True, include_usage=wire_name == "openai")
    if wire_name == "openai":
        n = len(list(wire_openai.stream_events(reply, info, "c", "reasoning_content")))
    else:
        n = len(list(wire_anthropic.stream_events(reply, info, "m")))
    server = serve({"loop": True, "replies": [{"text": "hi", "stall": 60, "stall_after": n}]})
    monkeypatch.setattr(wire, "DRAIN_MAX_SECONDS", 0.2)
    provider = make(server, wire_name, tls_cert, providers)
    started = time.monotonic()
    assert text_of(call(provider)) == "hi"
    assert time.monotonic() - started < PROMPTLY  # the drain gave up, not the minute's stall
    call(provider)
    assert server.connections_accepted == 2  # the undrained connection was not kept


def test_a_key_or_header_change_rebuilds_and_the_same_key_reuses(serve, tls_cert, providers):
    server = serve({"loop": True, "replies": [{"text": "ok"}]})
    provider = make(server, "openai", tls_cert, providers)
    closes = record_closes(provider)
    call(provider)
    call(provider)
    assert provider.slot.builds == 1
    call(provider, headers={"X-Vision": "1"})  # a request with extra headers
    assert provider.slot.builds == 2
    assert len(closes) == 1  # the old client was really closed
    call(provider, headers={"X-Vision": "1"})
    assert provider.slot.builds == 2
    assert server.requests_for()[-1].headers["x-vision"] == "1"
    assert server.requests_for()[0].headers["user-agent"].startswith("hermes-tui/")
    # Rebuilds share one TLS context.
    pool = sdk_http_client(provider.slot.cached)._transport._pool
    assert pool._ssl_context is wire.tls_context(tls_cert[0])


# -- W2: an error unwinds to a fresh pool ---------------------------------------------------------


@pytest.mark.parametrize("wire_name", WIRES)
def test_an_error_unwinds_to_a_fresh_pool(serve, tls_cert, providers, wire_name, caplog):
    caplog.set_level(logging.DEBUG, logger="hermes_tui.wire")
    server = serve(
        {
            "replies": [
                {"text": "a"},
                {"status": 500},
                {"text": "half", "drop_after": 1},
                {"text": "b"},
            ]
        }
    )
    provider = make(server, wire_name, tls_cert, providers)
    call(provider)
    with pytest.raises(ProviderError):
        call(provider)
    assert provider.slot.cached is None
    with pytest.raises(ProviderError):
        call(provider)
    assert text_of(call(provider)) == "b"
    assert provider.slot.builds == 3
    assert server.connections_accepted == 3
    reasons = [r.getMessage() for r in caplog.records if r.name == "hermes_tui.wire"]
    assert any("stream_request_complete (kept)" in m for m in reasons)
    assert any("request_error_cleanup (closed" in m for m in reasons)
    assert any("stream_error_cleanup (closed" in m for m in reasons)


# -- W3: one checked-out slot --------------------------------------------------------------------


def test_a_concurrent_call_gets_an_untracked_client(serve, tls_cert, providers):
    server = serve({"replies": [GATED, {"text": "concurrent"}, {"text": "after"}]})
    provider = make(server, "openai", tls_cert, providers)
    closes = record_closes(provider)
    worker = Worker(provider)
    worker.first.wait(10)
    assert text_of(call(provider)) == "concurrent"
    assert provider.slot.untracked == 1
    assert len(closes) == 1 and closes[0][1] == threading.get_ident()  # closed around it
    held = provider.slot.cached
    server.open_gate("g")
    worker.join()
    assert text_of(worker.parts) == GATED["text"]
    assert text_of(call(provider)) == "after"
    assert provider.slot.cached is held and provider.slot.builds == 2


# -- W4/W5: cross-thread abort, poison, owner-thread close ---------------------------------------


@pytest.mark.parametrize("wire_name", WIRES)
def test_a_cross_thread_abort_poisons_and_the_next_request_rebuilds(
    serve, tls_cert, providers, wire_name
):
    server = serve({"replies": [GATED, {"text": "fresh"}]})
    provider = make(server, wire_name, tls_cert, providers)
    closes = record_closes(provider)
    worker = Worker(provider)
    worker.first.wait(10)
    started = time.monotonic()
    worker.abort.fire()  # from this (stranger) thread
    worker.join()
    assert time.monotonic() - started < PROMPTLY
    assert worker.error is None and 0 < len(text_of(worker.parts)) < len(GATED["text"])
    assert [ident for _, ident in closes] == [worker.ident]  # only the owner closed it
    assert provider.slot.cached is None
    assert text_of(call(provider)) == "fresh"
    assert provider.slot.builds == 2


def test_a_late_abort_never_touches_the_next_requests_client(serve, tls_cert, providers):
    """Barrier test: the abort has read the holder; meanwhile the request ends and the next
    one checks the (kept) client out. The abort must not shut the new request's socket."""
    server = serve({"replies": [{"text": "one"}, GATED]})
    provider = make(server, "openai", tls_cert, providers)
    slot = provider.slot
    holder_read, moved = threading.Event(), threading.Event()

    def on_holder_read(lease):
        holder_read.set()
        moved.wait(0.3)  # give the worker every chance to race in

    lease1 = slot.checkout(provider.client_kwargs(provider.api_key))
    stream = lease1.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "one"
    slot.on_holder_read = on_holder_read
    stopper = threading.Thread(target=lease1.abort, args=("late stop",), daemon=True)
    stopper.start()
    holder_read.wait(5)
    slot.on_holder_read = None
    lease1.release("stream_request_complete")
    second = Worker(provider)
    second.first.wait(10)
    moved.set()
    stopper.join(5)
    server.open_gate("g")
    second.join()
    assert second.error is None
    assert text_of(second.parts) == GATED["text"]


def test_w4_a_truly_late_abort_after_release_leaves_the_next_request_alone(
    serve, tls_cert, providers
):
    """The stop comes after release() returned, while the next request streams on the kept
    client: its socket must not be shut down (W4)."""
    server = serve({"replies": [{"text": "one"}, GATED]})
    provider = make(server, "openai", tls_cert, providers)
    slot = provider.slot
    lease1 = slot.checkout(provider.client_kwargs(provider.api_key))
    stream = lease1.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "one"
    lease1.release("stream_request_complete")
    released = threading.Event()
    second = Worker(provider)
    second.first.wait(10)
    assert slot.builds == 1 and server.connections_accepted == 1  # the kept client and socket

    def late_stop():
        assert released.wait(5)
        lease1.abort("late stop")

    stopper = threading.Thread(target=late_stop, daemon=True)
    stopper.start()
    released.set()  # the barrier: the abort starts only after release() returned
    stopper.join(5)
    server.open_gate("g")
    second.join()
    assert second.error is None and text_of(second.parts) == GATED["text"]
    assert server.connections_accepted == 1


def test_a_failed_stream_close_poisons_the_slot(serve, tls_cert, providers, monkeypatch):
    server = serve({"loop": True, "replies": [{"text": "ok"}]})
    provider = make(server, "openai", tls_cert, providers)
    original = provider._open

    def _open(client, req, options):
        manager = original(client, req, options)
        exit_ = manager.__exit__

        def broken_exit(*args):
            exit_(*args)
            raise RuntimeError("close failed")

        manager.__exit__ = broken_exit
        return manager

    monkeypatch.setattr(provider, "_open", _open)
    call(provider)
    assert provider.slot.cached is None
    monkeypatch.setattr(provider, "_open", original)
    call(provider)
    assert provider.slot.builds == 2


# -- W6: release()/close() ------------------------------------------------------------------------


def test_close_when_idle_closes_and_when_checked_out_detaches(serve, tls_cert, providers):
    server = serve({"replies": [{"text": "idle"}, GATED]})
    provider = make(server, "openai", tls_cert, providers)
    closes = record_closes(provider)
    call(provider)
    provider.close()
    assert [ident for _, ident in closes] == [threading.get_ident()]
    worker = Worker(provider)
    worker.first.wait(10)
    provider.close()  # checked out: abort its sockets, detach, leave the fds to the owner
    assert len(closes) == 1
    worker.join()
    assert [ident for _, ident in closes] == [threading.get_ident(), worker.ident]


# -- W4/W5 at scale: 200 stop cycles leave the fd count flat -------------------------------------


def _fd_count():
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def subprocess_server(tls_cert, tmp_path):
    """A scripted server in another process, so its sockets are not counted as ours."""
    script = tmp_path / "s.yaml"
    script.write_text(
        "loop: true\nreplies:\n  - text: 'stalling forever after this'\n"
        "    chunk_size: 6\n    stall: 60\n    stall_after: 2\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(script),
         "--certfile", tls_cert[0], "--keyfile", tls_cert[1]],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    ready, _, _ = select.select([proc.stdout], [], [], 15)
    assert ready, "the scripted server did not start"
    url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    yield url
    proc.kill()
    proc.wait(5)


STOP_POINTS = ("after_headers", "between_parts", "in_read")


def test_200_stop_cycles_leave_the_fd_count_flat(subprocess_server, tls_cert, providers):
    """A stop, wherever it lands, leaves no socket open: the worker closes the half-read
    stream and the slot closes the poisoned client, on the worker's thread (W4, W5).

    CPython frees a dropped client's sockets at once (and the cyclic gc soon after), which
    would hide a leak: so every client the slot builds is kept alive, as anything in a real
    process may keep it (a traceback, a log record, an error the UI still shows), and the
    cyclic gc is off during the cycles. Only sockets our code closes count as closed.
    """
    config = ProviderConfig(
        name="sub", kind="openai", base_url=subprocess_server + "/v1", api_key=KEY,
        ca_file=tls_cert[0],
    )  # fmt: skip
    provider = make_provider(config, idle_timeout=10)
    providers.append(provider)
    built = []
    build = provider.slot._build

    def _build(kwargs):
        client = build(kwargs)
        built.append(client)
        return client

    provider.slot._build = _build
    aborts: queue.Queue = queue.Queue()

    def stopper():  # the UI thread: fires the stop
        while (item := aborts.get()) is not None:
            abort, fired = item
            abort.fire()
            fired.set()

    thread = threading.Thread(target=stopper, daemon=True)
    thread.start()

    def stop_and_wait(abort):
        fired = threading.Event()
        aborts.put((abort, fired))
        assert fired.wait(10)

    class StopAfterHeaders:
        """The response's headers are in, its body not read yet: the stop lands here."""

        def __init__(self, inner, abort):
            self.inner, self.abort = inner, abort

        def __enter__(self):
            response = self.inner.__enter__()
            stop_and_wait(self.abort)
            return response

        def __exit__(self, *exc_info):
            return self.inner.__exit__(*exc_info)

    open_ = provider._open

    def cycle(where: str):
        abort = Abort()
        if where == "after_headers":
            provider._open = lambda *a: StopAfterHeaders(open_(*a), abort)
        parts = provider.stream(request(), abort)
        try:
            for n, _part in enumerate(parts):
                if n == 0 and where == "between_parts":
                    stop_and_wait(abort)
                    break  # the worker sees the stop between two parts, as the agent loop does
                if n == 0 and where == "in_read":
                    aborts.put((abort, threading.Event()))  # the next read fails on shutdown
        finally:
            parts.close()  # the worker closes the half-read stream on its own thread (W5)
            provider._open = open_
        assert abort.fired

    for n in range(6):
        cycle(STOP_POINTS[n % 3])
    gc.collect()
    gc.disable()
    try:
        baseline = _fd_count()
        for n in range(200):
            cycle(STOP_POINTS[n % 3])
        after = _fd_count()
    finally:
        gc.enable()
        aborts.put(None)
        thread.join(5)
    assert after - baseline <= 2, (baseline, after)
    left = [sock for client in built for sock in wire.client_sockets(client)]
    assert left == [], f"{len(left)} socket(s) still in the pools of stopped calls' clients"
    assert provider.slot.builds == 206


# -- W7: the socket walk through a CONNECT proxy ---------------------------------------------------


class ConnectProxy:
    """A tiny threaded HTTP CONNECT proxy on loopback."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.tunnels = 0
        self.socks = []
        self.open_pipes = 0  # one per direction of each tunnel still carrying bytes
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            data += chunk
        target = data.split(b" ", 2)[1].decode()
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.tunnels += 1
        self.socks += [client, upstream]
        with self._lock:
            self.open_pipes += 2
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            self.open_pipes -= 1

    def close(self):
        # Shut the listener down before closing it: a close alone leaves the accept thread
        # blocked on a file descriptor number that a later test's server may reuse, and that
        # thread then steals the later server's connections.
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(5)
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass


def test_the_abort_walk_finds_sockets_under_a_proxy_mount(
    serve, tls_cert, providers, monkeypatch, caplog
):
    proxy = ConnectProxy()
    try:
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        server = serve({"replies": [{"text": "through the proxy"}, GATED]})
        provider = make(server, "openai", tls_cert, providers)
        assert text_of(call(provider)) == "through the proxy"
        assert proxy.tunnels == 1
        assert proxy.open_pipes == 2  # the kept connection's tunnel stays open
        http = sdk_http_client(provider.slot.cached)
        assert wire.client_sockets(http)  # the socket sits on the proxy mount
        assert not http._transport._pool.connections  # not on the default pool
        caplog.set_level(logging.WARNING, logger="hermes_tui.wire")
        worker = Worker(provider)
        worker.first.wait(10)
        started = time.monotonic()
        worker.abort.fire()
        worker.join()
        assert time.monotonic() - started < PROMPTLY
        assert worker.error is None
        assert proxy.tunnels == 1  # the kept tunnel carried both requests
        assert not [r for r in caplog.records if "found no socket" in r.getMessage()]
        # An abort that finds nothing says so.
        import httpx2

        with httpx2.Client() as bare:
            assert wire.shutdown_sockets(bare, "test") == 0
        assert [r for r in caplog.records if "found no socket" in r.getMessage()]
        # The stopped request's connection really went: its tunnel ends at the proxy too.
        wait_until(lambda: proxy.open_pipes == 0, what="the stopped request's tunnel to close")
    finally:
        proxy.close()


def test_an_abort_after_the_response_completed_still_poisons(serve, tls_cert, providers):
    """Sockets shut down by a stranger thread are never reused, even when the request ended
    well: the owner closes that client and the next request rebuilds (#29507)."""
    server = serve({"loop": True, "replies": [{"text": "ok"}]})
    provider = make(server, "openai", tls_cert, providers)
    lease = provider.slot.checkout(provider.client_kwargs(provider.api_key))
    stream = lease.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "ok"
    lease.abort("stop from another thread")
    lease.release("stream_request_complete")
    assert provider.slot.cached is None
    assert text_of(call(provider)) == "ok"
    assert provider.slot.builds == 2
