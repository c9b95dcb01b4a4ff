"""The scripted model in-process: the same bytes as over HTTP, no socket, a stop still lands."""

from __future__ import annotations

import re
import socket
import threading

import pytest
from waits import wait_until

from agent.config import ProviderConfig
from agent.kinds import ErrorKind
from agent.messages import Message
from agent.providers.base import Abort, ChatRequest, TextPart, ToolCallPart
from agent.providers.errors import ProviderError
from agent.providers.factory import make_provider
from agent.providers.wire import build_http_client
from agent.scripted import Script, ScriptedServer
from agent.scripted.in_process import InProcessScriptedServer

WIRES = ("openai", "anthropic")
SCRIPT = {
    "loop": True,
    "replies": [
        {"text": "in-process words, " * 5, "chunk_size": 7, "reasoning": "think"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
    ],
}
REQUEST = ChatRequest(model="m", messages=[Message("user", "go")])


@pytest.fixture
def providers():
    made = []

    def make(server, wire_name):
        base = server.openai_base_url if wire_name == "openai" else server.anthropic_base_url
        config = ProviderConfig(name="s", kind=wire_name, base_url=base, api_key="sk-in-proc-12")
        provider = make_provider(config, idle_timeout=30)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


@pytest.fixture
def no_connect(monkeypatch):
    """Fail any TCP connection this process opens (an in-process answer needs none)."""
    opened = []
    original = socket.socket.connect

    def connect(self, address):
        opened.append(address)
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return opened


def _body_bytes(server, wire_name, body):
    path = "/chat/completions" if wire_name == "openai" else "/v1/messages"
    base = server.openai_base_url if wire_name == "openai" else server.anthropic_base_url + "/v1"
    with build_http_client(timeout=10) as client:
        response = client.post(base + path.removeprefix("/v1"), json=body)
        # `created` is the clock's second: two calls compared may straddle one.
        body = re.sub(rb'"created": ?\d+', b'"created": 0', response.read())
        return response.status_code, response.headers.get("content-type"), body


@pytest.mark.parametrize("wire_name", WIRES)
def test_in_process_sends_the_http_servers_bytes(wire_name):
    """The in-process answer is byte for byte the HTTP server's (same script, same request)."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    if wire_name == "anthropic":
        body["max_tokens"] = 50
    http = ScriptedServer(Script.from_dict(SCRIPT)).start()
    local = InProcessScriptedServer(Script.from_dict(SCRIPT)).start()
    try:
        for _ in range(2):  # the text reply, then the tool call
            assert _body_bytes(local, wire_name, body) == _body_bytes(http, wire_name, body)
        assert [r.body for r in local.requests] == [r.body for r in http.requests]
    finally:
        http.stop()
        local.stop()


@pytest.mark.parametrize("wire_name", WIRES)
def test_a_provider_streams_in_process_without_a_socket(wire_name, providers, no_connect):
    server = InProcessScriptedServer(Script.from_dict(SCRIPT)).start()
    try:
        provider = providers(server, wire_name)
        parts = list(provider.stream(REQUEST, Abort()))
        assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "in-process words, " * 5
        calls = [p for p in provider.stream(REQUEST, Abort()) if isinstance(p, ToolCallPart)]
        assert calls[0].name == "read_file"
        assert len(server.requests_for(wire_name)) == 2
        assert no_connect == []
    finally:
        server.stop()


class _Reader:
    """One stream on its own thread (the agent's model call), parts and error kept."""

    def __init__(self, provider, abort):
        self.parts, self.error = [], None
        self.thread = threading.Thread(target=self._run, args=(provider, abort), daemon=True)
        self.thread.start()

    def _run(self, provider, abort):
        try:
            self.parts.extend(provider.stream(REQUEST, abort))
        except ProviderError as exc:
            self.error = exc


GATED = {"replies": [{"text": "before the gate, then after", "chunk_size": 4, "gate": "g"}]}


@pytest.mark.parametrize("wire_name", WIRES)
def test_a_stop_hangs_up_a_reply_waiting_at_a_gate(wire_name, providers):
    """W4 in-process: a stop from another thread ends a read held at a gate at once, quietly."""
    server = InProcessScriptedServer(Script.from_dict(GATED)).start()
    try:
        abort = Abort()
        reader = _Reader(providers(server, wire_name), abort)
        wait_until(lambda: server.requests_for(), what="the request reached the gate")
        abort.fire()
        reader.thread.join(10)
        assert not reader.thread.is_alive(), "the stop did not reach the waiting reply"
        assert reader.error is None and reader.parts == []
    finally:
        server.stop()


def test_a_server_stopped_mid_reply_drops_it_and_refuses_later_calls(providers):
    server = InProcessScriptedServer(Script.from_dict(GATED)).start()
    provider = providers(server, "openai")
    reader = _Reader(provider, Abort())
    wait_until(lambda: server.requests_for(), what="the request reached the gate")
    server.stop()
    reader.thread.join(10)
    assert not reader.thread.is_alive()
    assert reader.error is not None and reader.error.kind is ErrorKind.CONNECTION
    assert "dropped mid-answer" in reader.error.message
    with pytest.raises(ProviderError) as later:
        list(provider.stream(REQUEST, Abort()))
    assert later.value.kind is ErrorKind.CONNECTION


@pytest.mark.parametrize(
    "knob",
    [
        {"text": "cut off in the middle of it", "chunk_size": 4, "drop_after": 3},
        {"status": 429, "error_message": "slow down", "retry_after": 2},
        {"text": "whole", "stream": False},
    ],
    ids=["drop", "status", "json"],
)
def test_a_knob_ends_a_call_in_process_as_it_does_over_http(knob, providers):
    """A drop, an error status and a JSON reply reach the provider as the same outcome."""
    stream = knob.pop("stream", True)
    script = {"replies": [knob]}
    outcomes = []
    for server in (
        ScriptedServer(Script.from_dict(script)).start(),
        InProcessScriptedServer(Script.from_dict(script)).start(),
    ):
        try:
            provider = providers(server, "openai")
            if not stream:
                outcomes.append(_body_bytes(server, "openai", {"model": "m", "messages": []}))
                continue
            try:
                parts = list(provider.stream(REQUEST, Abort()))
                outcomes.append(("ok", "".join(p.text for p in parts if isinstance(p, TextPart))))
            except ProviderError as exc:
                outcomes.append((exc.kind, exc.message, exc.retry_after))
        finally:
            server.stop()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] != "ok" or not stream
