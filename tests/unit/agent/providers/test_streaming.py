"""The shared request path of both wires (agent/providers/streaming.py) against the scripted
server: what each failure becomes (W8-W11, K1-K3), the per-request timeouts (W9), keys."""

from __future__ import annotations

import json
import secrets
import time

import httpx2
import pytest

from agent.config import ProviderConfig
from agent.kinds import ErrorKind
from agent.messages import Message
from agent.providers.base import Abort, ChatRequest, FinishPart, TextPart, ToolCallPart
from agent.providers.errors import ProviderError
from agent.providers.factory import make_provider
from agent.providers.sdk_compat import RawStreamCall, sdk_http_client
from agent.providers.sse import MAX_SSE_LINE_BYTES
from agent.providers.streaming import merged_body
from agent.scripted import Script, ScriptedServer
from agent.version import USER_AGENT

KEY = "sk-streaming-test-key-0123456789"
WIRES = ("openai", "anthropic")
REQUEST = ChatRequest(model="m", messages=[Message("user", "hi")])


@pytest.fixture
def serve():
    """serve(script) -> a started scripted server (plain HTTP on loopback), stopped after."""
    servers: list[ScriptedServer] = []

    def _serve(script: dict) -> ScriptedServer:
        server = ScriptedServer(Script.from_dict(script)).start()
        servers.append(server)
        return server

    yield _serve
    for server in servers:
        server.stop()


@pytest.fixture
def provider_for(serve):
    """provider_for(script, wire, **config) -> an adapter for a new scripted server."""
    made = []

    def _make(script: dict, wire: str = "openai", idle_timeout: float = 10, **config):
        server = serve(script)
        base = server.openai_base_url if wire == "openai" else server.anthropic_base_url
        config.setdefault("api_key", KEY)
        provider = make_provider(
            ProviderConfig(name="scripted", kind=wire, base_url=base, **config),
            idle_timeout=idle_timeout,
        )
        provider.server = server
        made.append(provider)
        return provider

    yield _make
    for provider in made:
        provider.close()


def failure(provider, request: ChatRequest = REQUEST) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        list(provider.stream(request, Abort()))
    return caught.value


def raw(*lines: str) -> dict:
    return {"replies": [{"raw_sse": list(lines)}]}


# -- W10/W11: what a broken stream becomes -------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_w11_a_chunk_that_is_not_an_object_is_a_retryable_malformed_error(provider_for, wire):
    error = failure(provider_for(raw("data: [1]\n\n"), wire))
    assert error.kind == ErrorKind.MALFORMED and error.retryable
    assert error.message == "scripted sent a stream chunk that is not an object."


@pytest.mark.parametrize("wire", WIRES)
def test_w11_a_chunk_that_does_not_parse_is_retryable_and_redacted(provider_for, wire):
    error = failure(provider_for(raw(f"data: {{oops {KEY} " + "x" * 300 + "\n\n"), wire))
    assert error.kind == ErrorKind.MALFORMED and error.retryable
    assert error.message == "scripted sent a stream chunk that does not parse."
    assert KEY not in error.detail and "[redacted]" in error.detail
    assert error.detail == "{oops [redacted] " + "x" * (200 - len("{oops  ") - len(KEY))


@pytest.mark.parametrize("wire", WIRES)
def test_w10_a_stream_without_its_finish_is_a_retryable_truncation(provider_for, wire):
    provider = provider_for({"replies": [{"text": "half an answer", "omit_finish": True}]}, wire)
    error = failure(provider)
    assert error.kind == ErrorKind.TRUNCATED and error.retryable
    assert error.message == "scripted ended the stream before the answer was complete."


@pytest.mark.parametrize("wire", WIRES)
def test_h6_a_line_over_the_cap_is_an_oversized_reply_retried_once(provider_for, wire):
    script = raw("data: ", {"repeat": "x", "times": MAX_SSE_LINE_BYTES + 1}, "\n\n")
    error = failure(provider_for(script, wire))
    assert error.kind == ErrorKind.MALFORMED and error.retryable and error.max_attempts == 2
    assert error.message == (
        "scripted sent a reply over a safety limit (a stream line over 8 MB), so it was "
        "refused; ask again, or switch models if it keeps happening."
    )


@pytest.mark.parametrize("wire", WIRES)
def test_w8_a_dropped_connection_is_a_retryable_connection_error(provider_for, wire):
    provider = provider_for({"replies": [{"text": "dropped halfway", "drop_after": 2}]}, wire)
    error = failure(provider)
    assert error.kind == ErrorKind.CONNECTION and error.retryable
    # A drop mid-answer says so (not "cannot reach"), naming what broke by its type.
    assert error.detail in ("RemoteProtocolError", "ReadError")
    assert error.message == f"The connection to scripted dropped mid-answer ({error.detail})."
    assert provider.slot.cached is None  # W2: the unwound request closed its client


def test_w8_a_server_that_is_not_there_is_a_connection_error_naming_it(serve):
    server = serve({"replies": []})
    url = server.openai_base_url
    server.stop()
    provider = make_provider(
        ProviderConfig(name="gone", kind="openai", base_url=url, api_key=KEY), idle_timeout=5
    )
    try:
        error = failure(provider)
    finally:
        provider.close()
    assert error.kind == ErrorKind.CONNECTION and error.retryable
    # A refused connection on loopback says so and is retried once, not the usual count.
    assert error.message == (
        f"Nothing is listening at {url} for gone (connection refused): start the server, or "
        "fix the port in base_url."
    )
    assert error.detail == "APIConnectionError"


# -- W9: stalls, one cumulative deadline ---------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_w9_a_stall_is_a_retryable_timeout_that_names_the_idle_time(provider_for, wire):
    script = {"replies": [{"text": "x", "stall": 60}]}
    provider = provider_for(script, wire, idle_timeout=0.3)
    started = time.monotonic()
    error = failure(provider)
    assert time.monotonic() - started < 15  # the idle timeout, not the minute's stall
    assert error.kind == ErrorKind.TIMEOUT and error.retryable
    assert error.message == "scripted went silent for 0 s." and error.detail == "ReadTimeout"


@pytest.mark.parametrize("wire", WIRES)
def test_w9_a_retry_reads_no_longer_than_the_cumulative_deadline(provider_for, wire):
    # The idle timeout is a minute, but the call's deadline (set by the first stall) is 0.3 s
    # away: this attempt must give up then, not a whole idle period later.
    provider = provider_for({"loop": True, "replies": [{"text": "x", "stall": 120}]}, wire, 60)
    provider.call_deadline = time.monotonic() + 0.3
    started = time.monotonic()
    error = failure(provider)
    assert error.kind == ErrorKind.TIMEOUT
    assert time.monotonic() - started < 15


def test_w9_request_options_cut_the_read_timeout_to_the_deadline(provider_for):
    provider = provider_for({"replies": []}, idle_timeout=30, timeout_seconds=120)
    assert provider.request_options() == {}
    provider.call_deadline = time.monotonic() + 5
    timeout = provider.request_options()["timeout"]
    assert 4 < timeout.read <= 5
    assert (timeout.connect, timeout.write, timeout.pool) == (15.0, 120.0, 120.0)
    provider.call_deadline = time.monotonic() + 100
    assert provider.request_options()["timeout"].read == 30  # never more than idle
    provider.call_deadline = time.monotonic() - 1
    assert provider.request_options()["timeout"].read == 0.05  # past it: one short read


def test_w1_the_client_arguments_carry_key_headers_timeouts_and_no_sdk_retries(provider_for):
    provider = provider_for(
        {"replies": []}, idle_timeout=42, timeout_seconds=90, headers={"X-Team": "a"}
    )
    kwargs = provider.client_kwargs(provider.api_key)
    assert kwargs["api_key"] == KEY and kwargs["max_retries"] == 0
    assert kwargs["base_url"] == provider.server.openai_base_url and "ca_file" not in kwargs
    assert kwargs["default_headers"] == {"User-Agent": USER_AGENT, "X-Team": "a"}
    timeout = kwargs["timeout"]
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (15.0, 42, 90, 90)
    request = ChatRequest(model="m", messages=[], headers={"X-Vision": "1"})
    other = provider.client_kwargs("sk-other-key-000000", request)
    assert other["api_key"] == "sk-other-key-000000"
    assert other["default_headers"]["X-Vision"] == "1"
    sdk = provider.sdk_kwargs({**kwargs, "ca_file": None})
    assert "ca_file" not in sdk and isinstance(sdk["http_client"], httpx2.Client)
    sdk["http_client"].close()


@pytest.mark.parametrize("wire", WIRES)
def test_a5_every_request_carries_the_user_agent_and_the_raw_stream_marker(provider_for, wire):
    provider = provider_for(
        {"loop": True, "replies": [{"text": "ok"}]}, wire, headers={"X-Team": "a"}
    )
    parts = list(provider.stream(REQUEST, Abort()))
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "ok"
    assert any(isinstance(p, FinishPart) for p in parts)
    request = ChatRequest(model="m", messages=[Message("user", "hi")], headers={"X-Vision": "1"})
    list(provider.stream(request, Abort()))
    first, second = provider.server.requests_for()
    assert first.headers["user-agent"] == USER_AGENT and first.headers["x-team"] == "a"
    assert second.headers["x-vision"] == "1" and "x-vision" not in first.headers


def test_raw_stream_call_passes_only_the_timeout_option_and_closes_its_response():
    calls = []

    class Response:
        closed = False

        def close(self):
            self.closed = True

    class Client:
        def post(self, path, **kwargs):
            calls.append((path, kwargs))
            return Response()

    timeout = httpx2.Timeout(1.0)
    with RawStreamCall(Client(), "/p", {"a": 1}, {"timeout": timeout, "other": 1}) as call:
        response = call.http_response
    assert response.closed
    ((path, kwargs),) = calls
    assert path == "/p" and kwargs["body"] == {"a": 1} and kwargs["cast_to"] is httpx2.Response
    assert kwargs["options"] == {
        "headers": {"X-Stainless-Raw-Response": "stream"},
        "timeout": timeout,
    }
    with RawStreamCall(Client(), "/p", {}, {}):
        pass
    assert calls[1][1]["options"] == {"headers": {"X-Stainless-Raw-Response": "stream"}}
    RawStreamCall(Client(), "/p", {}, {}).__exit__(None, None, None)  # never entered


def test_extra_body_is_merged_at_the_top_level():
    assert merged_body({"model": "m", "extra_body": {"session_id": "s"}}) == {
        "model": "m",
        "session_id": "s",
    }
    assert merged_body({"model": "m", "extra_body": None}) == {"model": "m"}


# -- K1: credential pools -------------------------------------------------------------------


def pool_provider(provider_for, monkeypatch, script, wire="openai"):
    monkeypatch.setenv("POOL_KEY_A", "sk-pool-key-aaaaaaaa")
    monkeypatch.setenv("POOL_KEY_B", "sk-pool-key-bbbbbbbb")
    return provider_for(script, wire, api_key=None, api_keys_env=("POOL_KEY_A", "POOL_KEY_B"))


@pytest.mark.parametrize("status", [401, 403, 429])
def test_k1_a_rotation_is_retryable_at_once_and_says_so(provider_for, monkeypatch, status):
    script = {"replies": [{"status": status, "retry_after": 30}, {"text": "ok"}]}
    provider = pool_provider(provider_for, monkeypatch, script)
    error = failure(provider)
    assert error.rotated and error.retryable and error.retry_after == 0.0
    assert error.message.endswith(". Switched to the next key of the pool.")
    assert error.message.startswith(f"scripted rejected the API key (HTTP {status})") or (
        error.message.startswith("scripted is rate-limiting requests (HTTP 429)")
    )
    a, b = provider.pool.entries
    assert (a.failures, a.last_status, b.failures) == (1, status, 0)
    assert provider.api_key == "sk-pool-key-bbbbbbbb"
    assert "".join(p.text for p in provider.stream(REQUEST, Abort()) if hasattr(p, "text")) == "ok"


def test_k1_a_429_cools_its_key_down_for_the_servers_retry_after(provider_for, monkeypatch):
    script = {"replies": [{"status": 429, "retry_after": 7}]}
    provider = pool_provider(provider_for, monkeypatch, script)
    before = time.monotonic()
    failure(provider)
    a = provider.pool.entries[0]
    assert before + 6 < a.cooldown_until <= time.monotonic() + 7  # not the 60 s default


def test_k1_a_one_entry_pool_does_not_rotate_and_keeps_the_wait(provider_for):
    provider = provider_for({"replies": [{"status": 429, "retry_after": 5}]})
    error = failure(provider)
    assert not error.rotated and error.retryable and error.retry_after == 5
    assert "Switched" not in error.message and "try again in 5 s" in error.message
    entry = provider.pool.entries[0]
    assert (entry.failures, entry.last_status) == (1, 429)


@pytest.mark.parametrize("status", [400, 404, 500])
def test_k1_other_statuses_are_not_charged_to_the_key(provider_for, monkeypatch, status):
    provider = pool_provider(provider_for, monkeypatch, {"replies": [{"status": status}]})
    error = failure(provider)
    assert error.status == status and not error.rotated
    assert [e.failures for e in provider.pool.entries] == [0, 0]


def test_k1_a_success_clears_the_issuing_keys_failures(provider_for, monkeypatch):
    script = {"replies": [{"status": 500}, {"text": "ok"}]}
    provider = pool_provider(provider_for, monkeypatch, script)
    provider.pool.entries[0].failures = 2
    failure(provider)
    assert provider.pool.entries[0].failures == 2
    list(provider.stream(REQUEST, Abort()))
    assert provider.pool.entries[0].failures == 0


@pytest.mark.parametrize("wire", WIRES)
def test_k2_the_error_body_reaches_the_sentence_and_the_key_does_not(provider_for, wire):
    message = f"model field is wrong; your key {KEY} is fine"
    provider = provider_for({"replies": [{"status": 400, "error_message": message}]}, wire)
    error = failure(provider)
    assert error.kind == ErrorKind.BAD_REQUEST and error.status == 400
    assert "model field is wrong" in error.message and KEY not in error.message


def test_k2_a_404_names_the_requested_model(provider_for):
    provider = provider_for({"replies": [{"status": 404}]})
    error = failure(provider, ChatRequest(model="gpt-nope", messages=[Message("user", "hi")]))
    assert error.kind == ErrorKind.NOT_FOUND and "'gpt-nope'" in error.message


def test_k2_errors_name_the_endpoint_without_its_credentials(provider_for):
    provider = provider_for({"replies": []})
    assert provider.base_url == provider.server.openai_base_url
    provider.config = ProviderConfig(name="x", base_url="https://user:pw@example.com/v1")
    assert "pw" not in provider.base_url and "example.com" in provider.base_url
    provider.config = ProviderConfig(name="x")
    assert provider.base_url == "the default endpoint"


# -- a keyless local server ----------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_a_local_server_needs_no_key(serve, wire):
    server = serve({"replies": [{"text": "local answer"}]})
    base = server.openai_base_url if wire == "openai" else server.anthropic_base_url
    provider = make_provider(
        ProviderConfig(name="ollama", kind=wire, base_url=base), idle_timeout=5
    )
    try:
        parts = list(provider.stream(REQUEST, Abort()))
    finally:
        provider.close()
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "local answer"
    assert provider.pool.entries[0].id == "ollama:local"
    (sent,) = server.requests_for()
    key = sent.headers.get("x-api-key") or sent.headers["authorization"].removeprefix("Bearer ")
    assert key == "local"


def test_a_remote_server_without_a_key_is_refused_before_any_request():
    with pytest.raises(ProviderError) as caught:
        make_provider(
            ProviderConfig(name="remote", base_url="https://api.example.com/v1"), idle_timeout=5
        )
    assert caught.value.kind == ErrorKind.AUTH and "No API key for provider remote" in str(
        caught.value.message
    )


# -- aborts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_t6_a_stop_before_the_request_ends_it_quietly(provider_for, wire):
    provider = provider_for({"replies": [{"text": "never"}]}, wire)
    abort = Abort()
    abort.fire()
    assert list(provider.stream(REQUEST, abort)) == []
    assert provider.server.requests_for() == []


@pytest.mark.parametrize("wire", WIRES)
def test_t6_a_stop_that_breaks_the_read_is_no_error(provider_for, wire):
    text = "a long answer " * 20
    script = {"replies": [{"text": text, "chunk_size": 4, "stall": 120, "stall_after": 4}]}
    provider = provider_for(script, wire, idle_timeout=60)
    abort = Abort()
    parts = []
    started = time.monotonic()
    for part in provider.stream(REQUEST, abort):
        parts.append(part)
        if isinstance(part, TextPart):
            abort.fire()  # the next read fails on the shut socket: a stop, not an error
    assert time.monotonic() - started < 15  # the abort, not the minute's idle timeout
    assert len("".join(p.text for p in parts if isinstance(p, TextPart))) < len(text)
    assert provider.slot.cached is None


# -- W1/W2/W5: the request path keeps, closes and poisons clients ------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_w1_complete_streams_share_one_client_and_one_connection(provider_for, wire):
    provider = provider_for({"loop": True, "replies": [{"text": "again"}]}, wire)
    for _ in range(3):
        parts = list(provider.stream(REQUEST, Abort()))
        assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "again"
    assert provider.slot.builds == 1 and provider.server.connections_accepted == 1
    assert provider.slot.name == f"scripted/{wire}"


def test_w1_the_sdk_clients_http_client_has_the_same_timeouts(provider_for):

    provider = provider_for({"replies": [{"text": "ok"}]}, idle_timeout=33, timeout_seconds=77)
    list(provider.stream(REQUEST, Abort()))
    http = sdk_http_client(provider.slot.cached)
    assert (http.timeout.connect, http.timeout.read, http.timeout.write) == (15.0, 33, 77)


def test_w1_a_ca_file_is_trusted_for_tls(tmp_path):
    from agent.scripted.certs import OpenSSLMissing, self_signed_cert

    try:
        certfile, keyfile = self_signed_cert(tmp_path)
    except OpenSSLMissing:
        pytest.skip("openssl is not available")
    script = Script.from_dict({"replies": [{"text": "over tls"}]})
    server = ScriptedServer(script, certfile=certfile, keyfile=keyfile).start()
    config = ProviderConfig(
        name="tls", base_url=server.openai_base_url, api_key=KEY, ca_file=certfile
    )
    provider = make_provider(config, idle_timeout=5)
    try:
        assert provider.client_kwargs(provider.api_key)["ca_file"] == certfile
        parts = list(provider.stream(REQUEST, Abort()))
    finally:
        provider.close()
        server.stop()
    assert "".join(p.text for p in parts if isinstance(p, TextPart)) == "over tls"


def test_w5_a_stream_that_fails_to_close_poisons_its_client(provider_for, monkeypatch):
    provider = provider_for({"loop": True, "replies": [{"text": "ok"}]})
    real_open = provider._open

    def open_with_a_broken_close(client, request, options):
        manager = real_open(client, request, options)
        real_exit = manager.__exit__

        def broken_exit(*args):
            real_exit(*args)
            raise RuntimeError("close failed")

        manager.__exit__ = broken_exit
        return manager

    monkeypatch.setattr(provider, "_open", open_with_a_broken_close)
    list(provider.stream(REQUEST, Abort()))
    assert provider.slot.cached is None
    monkeypatch.setattr(provider, "_open", real_open)
    list(provider.stream(REQUEST, Abort()))
    assert provider.slot.builds == 2


def test_w4_a_stop_after_the_stream_ended_never_reaches_the_slot(provider_for, monkeypatch):
    provider = provider_for({"replies": [{"text": "ok"}]})
    aborts = []
    monkeypatch.setattr(provider.slot, "abort", lambda lease, why="stop": aborts.append(why))
    abort = Abort()
    list(provider.stream(REQUEST, abort))
    abort.fire()  # the request is over: the abort was unbound from its lease
    assert aborts == []


def test_w8_a_timeout_before_the_response_is_a_retryable_timeout(provider_for, monkeypatch):
    import openai

    provider = provider_for({"replies": []})

    class TimesOut:
        def __enter__(self):
            raise openai.APITimeoutError(request=httpx2.Request("POST", "http://x"))

    monkeypatch.setattr(provider, "_open", lambda *args: TimesOut())
    error = failure(provider)
    assert error.kind == ErrorKind.TIMEOUT and error.retryable
    assert error.detail == "APITimeoutError"


def test_t6_a_stop_that_cut_the_sending_short_is_no_error(provider_for, monkeypatch):
    import openai

    provider = provider_for({"replies": []})
    abort = Abort()

    class Cut:
        def __enter__(self):
            abort.fire()
            raise openai.APIConnectionError(request=httpx2.Request("POST", "http://x"))

    monkeypatch.setattr(provider, "_open", lambda *args: Cut())
    assert list(provider.stream(REQUEST, abort)) == []
    assert provider.slot.cached is None


# -- H6: the tool-call bounds of one reply --------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_h6_a_reply_with_too_many_tool_calls_is_refused(provider_for, wire):
    calls = [{"id": f"c{n}", "name": "list_dir", "arguments": {"path": "."}} for n in range(129)]
    error = failure(provider_for({"replies": [{"tool_calls": calls}]}, wire))
    assert error.kind == ErrorKind.MALFORMED and error.max_attempts == 2
    assert "(more than 128 tool calls in one reply)" in error.message
    fine = provider_for({"replies": [{"tool_calls": calls[:128]}]}, wire)
    names = [p.name for p in fine.stream(REQUEST, Abort()) if isinstance(p, ToolCallPart)]
    assert names.count("list_dir") == 128


# -- K1/K3: which key failed, what is redacted ------------------------------------------------


def test_k1_the_log_names_the_failing_entry_never_its_key(provider_for, monkeypatch, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="hermes_tui.providers")
    script = {"replies": [{"status": 429}, {"status": 401}]}
    provider = pool_provider(provider_for, monkeypatch, script)
    failure(provider)
    failure(provider)  # key A still cools down: nothing left to rotate to
    said = [r.getMessage() for r in caplog.records if r.name == "hermes_tui.providers"]
    assert said == [
        "credential scripted:POOL_KEY_A failed (HTTP 429); rotated to the next usable key",
        "credential scripted:POOL_KEY_B failed (HTTP 401); no other usable key",
    ]


def test_k3_every_key_of_the_pool_and_the_urls_token_are_redacted(serve, monkeypatch):
    from agent.providers.errors import redact

    monkeypatch.setenv("PLAIN_A", "plainkeyAAAA1111")
    monkeypatch.setenv("PLAIN_B", "plainkeyBBBB2222")
    server = serve({"replies": [{"status": 400, "error_message": "bad plainkeyBBBB2222"}]})
    config = ProviderConfig(
        name="plain",
        base_url=server.openai_base_url + "?token=urltoken987654",
        api_keys_env=("PLAIN_A", "PLAIN_B"),
    )
    provider = make_provider(config, idle_timeout=5)
    try:
        assert redact("a plainkeyAAAA1111 b plainkeyBBBB2222 c urltoken987654") == (
            "a [redacted] b [redacted] c [redacted]"
        )
    finally:
        provider.close()


def test_k2_a_404_before_any_request_names_no_model(provider_for):
    provider = provider_for({"replies": []})
    body = {"error": {"code": "model_not_found", "message": "no such model"}}
    assert provider.classify(404, body, None).message == (
        "scripted does not know model '' (HTTP 404): pick another with /model."
    )


class StatusError(Exception):
    """An SDK status error as _from_status_error reads it: maybe a status, a body, a response."""

    def __init__(self, **attrs) -> None:
        super().__init__("status error")
        self.__dict__.update(attrs)


def test_k2_a_status_error_is_read_from_the_exception_then_its_response(provider_for):
    provider = provider_for({"replies": []})
    read = provider._from_status_error
    response = httpx2.Response(404, json={"error": {"message": "from the response"}})
    error = read(StatusError(status_code=429, body=None, response=response))
    assert error.status == 429 and error.detail == "from the response"
    error = read(StatusError(response=response))  # no status and no body on the exception
    assert error.status == 404 and error.detail == "from the response"
    body = {"error": {"message": "from the body"}}
    assert read(StatusError(status_code=400, body=body, response=response)).detail == (
        "from the body"
    )
    text = httpx2.Response(400, text="plain words, not JSON")
    error = read(StatusError(response=text))
    assert error.status == 400 and "plain words, not JSON" in error.message
    bare = read(StatusError())
    assert bare.status == 500 and bare.retry_after is None and bare.retryable
    waited = httpx2.Response(429, headers={"Retry-After": "12"}, json={})
    assert read(StatusError(response=waited)).retry_after == 12


# -- K2: a wrong base_url, and a JSON error where a stream was expected ---------------------


@pytest.mark.parametrize(
    ("wire", "ending"),
    [("openai", "ends in /v1"), ("anthropic", "has no /v1 (the client adds /v1/messages)")],
)
def test_k2_a_404_not_about_the_model_names_the_url_and_the_wires_advice(
    provider_for, wire, ending
):
    provider = provider_for({"replies": []}, wire)
    assert provider.classify(404, {}, None).message == (
        f"scripted has no such endpoint at {provider.base_url}: HTTP 404. The base_url looks "
        f"wrong: check it in config.yaml (for this wire it usually {ending})."
    )


class JSONReply:
    """A 200 whose body is JSON (not a stream), handed out in the given chunks."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.read = 0

    def iter_bytes(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk


def test_k2_a_json_error_instead_of_a_stream_is_read_across_chunks(provider_for):
    provider = provider_for({"replies": []})
    reply = JSONReply(b'{"error": {"message": "Unexpected endpoint', b' or method."}}')
    error = provider._json_instead_of_stream(reply)
    assert error.kind == ErrorKind.NOT_FOUND and error.status == 404
    assert error.detail == "Unexpected endpoint or method."


def test_k2_a_json_body_without_a_message_is_shown_cut_to_200_characters(provider_for):
    provider = provider_for({"replies": []})
    body = {"x": "y" * 300}
    error = provider._json_instead_of_stream(JSONReply(json.dumps(body).encode()))
    shown = f"the server answered JSON instead of a stream: {str(body)[:200]}"
    assert error.kind == ErrorKind.BAD_REQUEST and error.status == 400
    assert error.message == f"scripted refused the request (HTTP 400): {shown}."


def test_k2_a_body_that_is_not_json_is_shown_as_text(provider_for):
    provider = provider_for({"replies": []})
    error = provider._json_instead_of_stream(JSONReply(b"\xff" + b"z" * 300))
    assert error.status == 400
    assert error.message == f"scripted refused the request (HTTP 400): \ufffd{'z' * 199}."


def test_k2_a_json_reply_is_read_only_so_far(provider_for):
    provider = provider_for({"replies": []})
    head = b'{"error": {"message": "too big"}}'
    reply = JSONReply(head + b" " * (40 * 1024), b" " * (40 * 1024), b" " * 1024)
    error = provider._json_instead_of_stream(reply)
    assert error.detail == "too big" and reply.read == 2  # the third chunk is never read


def test_k2_a_status_error_whose_response_has_no_text_reads_as_empty(provider_for):
    provider = provider_for({"replies": []})

    class Bare:
        status_code = 500
        headers: dict = {}

        def json(self):
            raise ValueError("not JSON")

    error = provider._from_status_error(StatusError(response=Bare()))
    assert error.status == 500 and error.detail == ""


def test_h5_a_new_providers_keys_and_url_credentials_are_redacted_from_then_on():
    """Building an adapter registers its keys and its URL's password: every later error and
    log line is redacted, whatever reaches them (fresh values: the registry is global)."""
    from agent.providers.errors import redact

    key, password = f"plain{secrets.token_hex(12)}", f"pw{secrets.token_hex(12)}"
    base = f"http://user:{password}@127.0.0.1:9/v1"
    provider = make_provider(
        ProviderConfig(name="fresh", kind="openai", base_url=base, api_key=key), idle_timeout=5
    )
    provider.close()
    said = redact(f"the server echoed {key} and {password}")
    assert key not in said and password not in said
