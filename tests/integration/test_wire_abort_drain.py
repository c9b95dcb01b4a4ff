"""An aborted stream is dropped, never drained: a stop returns at once (T6, W4/W5); so is a
stream that fails midway (W2)."""

from __future__ import annotations

import contextlib
import re
import socket
import threading

import pytest
from waits import wait_until

from agent.config import ProviderConfig
from agent.kinds import ErrorKind
from agent.messages import Message
from agent.providers import wire
from agent.providers.base import Abort, ChatRequest, TextPart
from agent.providers.errors import ProviderError
from agent.providers.factory import make_provider
from agent.scripted import Script, ScriptedServer

LONG = {"loop": True, "replies": [{"text": "slow words " * 400, "chunk_size": 4, "delay": 0.002}]}


@pytest.fixture
def provider():
    server = ScriptedServer(Script.from_dict(LONG)).start()
    config = ProviderConfig(name="s", kind="openai", base_url=server.openai_base_url, api_key="k")
    adapter = make_provider(config, idle_timeout=30)
    yield adapter
    adapter.close()
    server.stop()


@pytest.fixture
def drains(monkeypatch):
    calls = []
    original = wire._DrainingBody._drain

    def spy(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(wire._DrainingBody, "_drain", spy)
    return calls


REQUEST = ChatRequest(model="m", messages=[Message("user", "go")])


def test_a_consumer_that_stops_reading_on_abort_drops_the_body(provider, drains):
    abort = Abort()
    for part in provider.stream(REQUEST, abort):
        if isinstance(part, TextPart):
            abort.fire()
            break
    assert drains == []


def test_an_abort_during_the_request_send_drops_the_body(provider, drains, monkeypatch):
    abort = Abort()
    original = type(provider)._open

    def open_then_stop(self, client, request, options):
        manager = original(self, client, request, options)
        abort.fire()  # the stop lands before any socket exists to shut down
        return manager

    monkeypatch.setattr(type(provider), "_open", open_then_stop)
    assert list(provider.stream(REQUEST, abort)) == []
    assert drains == []


def test_a_finished_stream_is_still_drained_for_keep_alive(provider, drains):
    short = ScriptedServer(Script.from_dict({"replies": [{"text": "done"}]})).start()
    try:
        url = short.openai_base_url
        config = ProviderConfig(name="s", kind="openai", base_url=url, api_key="k")
        adapter = make_provider(config, idle_timeout=30)
        parts = list(adapter.stream(REQUEST, Abort()))
        adapter.close()
    finally:
        short.stop()
    assert any(isinstance(p, TextPart) for p in parts)
    assert drains  # the kept-connection fix still runs on complete streams


# The first event, a chunk that does not parse, the second event; the rest waits on a gate.
HELD_BACK = {"text": "one two three four", "chunk_size": 4, "malformed_after": 1,
             "gate": "rest", "gate_after": 2}  # fmt: skip


@pytest.mark.parametrize("wire_name", ["openai", "anthropic"])
def test_w2_a_stream_that_fails_midway_drops_its_body_at_once(wire_name, monkeypatch):
    """A chunk that does not parse ends the attempt (W11) while the server still holds the rest
    of the body back: the body goes with the closed client (W2) at once, never drained first
    (a drain would wait on the server, here for a minute)."""
    monkeypatch.setattr(wire, "DRAIN_MAX_SECONDS", 60.0)
    server = ScriptedServer(Script.from_dict({"replies": [HELD_BACK]})).start()
    url = server.openai_base_url if wire_name == "openai" else server.anthropic_base_url
    config = ProviderConfig(name="s", kind=wire_name, base_url=url, api_key="k")
    adapter = make_provider(config, idle_timeout=30)
    errors = []

    def attempt():
        try:
            list(adapter.stream(REQUEST, Abort()))
        except ProviderError as exc:
            errors.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    try:
        wait_until(lambda: errors, timeout=5, what="the failed attempt to return")
    finally:
        server.open_gate("rest")  # a draining client gets the rest and returns
        worker.join(10)
        adapter.close()
        server.stop()
    assert errors[0].kind == ErrorKind.MALFORMED


class JSONErrorServer:
    """Answers one streamed request with a 200 JSON error over the 64 KiB read for its message;
    the body's end waits until `finish` is set (LM Studio-like, on a slow or stuck server)."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.finish = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        with contextlib.suppress(OSError):
            conn, _ = self.listener.accept()
            with conn:
                self._answer(conn)

    def _answer(self, conn):
        data = b""
        while b"\r\n\r\n" not in data:
            data += _received(conn)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(body) < length:
            body += _received(conn)
        reply = b'{"error": {"message": "model is loading"}}' + b" " * (70 * 1024)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(reply), reply)
        )
        self.finish.wait(30)
        conn.sendall(b"0\r\n\r\n")

    def stop(self):
        self.finish.set()
        self.listener.close()
        self._thread.join(5)


def _received(conn) -> bytes:
    chunk = conn.recv(65536)
    if not chunk:
        raise OSError("the client went away")
    return chunk


def test_w2_a_json_error_instead_of_a_stream_drops_the_rest_of_its_body(monkeypatch):
    """A 200 JSON error where a stream was expected is read up to its bound for the message;
    the rest is dropped with the closed client (W2), never drained from a stuck server."""
    monkeypatch.setattr(wire, "DRAIN_MAX_SECONDS", 60.0)
    server = JSONErrorServer()
    config = ProviderConfig(name="s", kind="openai", base_url=server.url, api_key="k")
    adapter = make_provider(config, idle_timeout=30)
    errors = []

    def attempt():
        try:
            list(adapter.stream(REQUEST, Abort()))
        except ProviderError as exc:
            errors.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    try:
        wait_until(lambda: errors, timeout=5, what="the JSON error to be raised")
    finally:
        server.finish.set()
        worker.join(10)
        adapter.close()
        server.stop()
    assert errors[0].detail == "model is loading"
