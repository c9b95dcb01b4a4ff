"""The scripted model server over real HTTP, through the real openai and anthropic SDKs."""

from __future__ import annotations

import http.client
import json
import queue
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest

from agent.scripted import Script, ScriptedServer

TOOL = {"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object"}}}
CONNECTION_ERRORS = (openai.APIConnectionError, anthropic.APIConnectionError, httpx2.HTTPError)


@pytest.fixture
def serve():
    """serve(dict_or_script) -> a started server, stopped at teardown."""
    servers = []

    def _serve(script, **kwargs):
        if isinstance(script, dict):
            script = Script.from_dict(script)
        server = ScriptedServer(script, **kwargs).start()
        servers.append(server)
        return server

    yield _serve
    for server in servers:
        server.stop()


def oai(server, **kwargs):
    return openai.OpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0, **kwargs)


def ant(server):
    return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="x", max_retries=0)


def oai_stream(server, text="hi", **kwargs):
    return oai(server).chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": text}],
        stream=True,
        stream_options={"include_usage": True},
        **kwargs,
    )


def collect_openai(stream):
    """Assemble reasoning, text, tool calls, finish reason and usage from chunks."""
    out = {"reasoning": "", "text": "", "calls": {}, "finish": None, "usage": None, "n": 0}
    for chunk in stream:
        out["n"] += 1
        if chunk.usage is not None:
            out["usage"] = chunk.usage
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        extra = delta.model_extra or {}
        out["reasoning"] += extra.get("reasoning_content") or extra.get("reasoning") or ""
        out["text"] += delta.content or ""
        for tc in delta.tool_calls or ():
            call = out["calls"].setdefault(tc.index, {"id": None, "name": None, "args": ""})
            if tc.id is not None:
                call["id"] = tc.id
            if tc.function and tc.function.name:
                call["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                call["args"] += tc.function.arguments
        if choice.finish_reason:
            out["finish"] = choice.finish_reason
    return out


FULL = {
    "reasoning": "Let me look at the files first. Then answer.",
    "text": "Here is **markdown** with ünïcode ✓",
    "tool_calls": [
        {"id": "call_1", "name": "list_dir", "arguments": {"path": "."}},
        {"id": "call_2", "name": "read_file", "arguments": {"path": "a.py", "lines": [1, 20]}},
    ],
    "chunk_size": 4,
}


# -- OpenAI wire -------------------------------------------------------------------------------


def test_openai_stream_through_sdk(serve):
    server = serve({"replies": [FULL]})
    got = collect_openai(oai_stream(server, tools=[TOOL]))
    assert got["reasoning"] == FULL["reasoning"]
    assert got["text"] == FULL["text"]
    assert got["calls"] == {
        0: {"id": "call_1", "name": "list_dir", "args": '{"path": "."}'},
        1: {"id": "call_2", "name": "read_file", "args": '{"path": "a.py", "lines": [1, 20]}'},
    }
    assert got["finish"] == "tool_calls"
    assert got["usage"].total_tokens == got["usage"].prompt_tokens + got["usage"].completion_tokens
    assert got["n"] > 20  # really chunked at 4 characters


def test_openai_reasoning_key_usage_and_finish_override(serve):
    server = serve(
        {
            "reasoning_key": "reasoning",
            "replies": [
                {
                    "reasoning": "hmm",
                    "text": "cut",
                    "finish_reason": "length",
                    "usage": {"input_tokens": 12, "output_tokens": 34},
                }
            ],
        }
    )
    chunks = list(oai_stream(server))
    extras = [c.choices[0].delta.model_extra for c in chunks if c.choices]
    assert any(e.get("reasoning") == "hmm" for e in extras)
    assert not any("reasoning_content" in e for e in extras)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    usage = chunks[-1].usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 34, 46)


def test_openai_tool_call_without_id_and_invalid_arguments(serve):
    server = serve(
        {"replies": [{"tool_calls": [{"name": "broken", "arguments": '{"path": "unterminated'}]}]}
    )
    got = collect_openai(oai_stream(server))
    assert got["calls"] == {0: {"id": None, "name": "broken", "args": '{"path": "unterminated'}}
    raw = server.requests[-1]
    assert raw.wire == "openai"


def test_openai_non_streaming(serve):
    server = serve({"replies": [FULL]})
    completion = oai(server).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}]
    )
    message = completion.choices[0].message
    assert message.content == FULL["text"]
    assert message.model_extra["reasoning_content"] == FULL["reasoning"]
    assert [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls
    ] == [
        ("call_1", "list_dir", {"path": "."}),
        ("call_2", "read_file", {"path": "a.py", "lines": [1, 20]}),
    ]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.total_tokens > 0


def test_echo_reply(serve):
    server = serve({"loop": True, "replies": [{"echo": True}]})
    assert collect_openai(oai_stream(server, "marco"))["text"] == "echo: marco"
    assert collect_openai(oai_stream(server, "polo"))["text"] == "echo: polo"


# -- Anthropic wire ----------------------------------------------------------------------------


def test_anthropic_stream_through_sdk(serve):
    server = serve({"replies": [dict(FULL, signature="sig-abc")]})
    with ant(server).messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"name": "list_dir", "input_schema": {"type": "object"}}],
    ) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == FULL["text"]
    kinds = [b.type for b in message.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[0].thinking == FULL["reasoning"]
    assert message.content[0].signature == "sig-abc"
    assert message.content[2].id == "call_1" and message.content[2].input == {"path": "."}
    assert message.content[3].input == {"path": "a.py", "lines": [1, 20]}
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert server.requests[-1].wire == "anthropic"


def test_anthropic_raw_events_and_stop_reason_mapping(serve):
    server = serve(
        {
            "replies": [
                {
                    "reasoning": "deep thought",
                    "text": "partial",
                    "finish_reason": "length",
                    "usage": {"input_tokens": 7, "output_tokens": 9},
                }
            ]
        }
    )
    events = list(
        ant(server).messages.create(
            model="claude-test",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
    )
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert events[0].message.usage.input_tokens == 7
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert "thinking_delta" in deltas and "signature_delta" in deltas and "text_delta" in deltas
    sig = next(
        e.delta.signature
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "signature_delta"
    )
    assert sig
    message_delta = next(e for e in events if e.type == "message_delta")
    assert message_delta.delta.stop_reason == "max_tokens"
    assert message_delta.usage.output_tokens == 9


def test_anthropic_non_streaming_and_tool_result_rule(serve):
    server = serve(
        {
            "replies": [
                {"text": "after tool", "match": {"last_role": "tool", "wire": "anthropic"}},
                {"reasoning": "r", "tool_calls": [{"id": "t1", "name": "ls", "arguments": {}}]},
            ]
        }
    )
    client = ant(server)
    first = client.messages.create(
        model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "go"}]
    )
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    assert first.content[0].signature and first.stop_reason == "tool_use"
    second = client.messages.create(
        model="claude-test",
        max_tokens=10,
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
            },
        ],
    )
    assert second.content[0].text == "after tool" and second.stop_reason == "end_turn"


# -- errors and broken streams -----------------------------------------------------------------


def test_openai_rate_limit_error(serve):
    server = serve({"replies": [{"status": 429, "error_message": "slow down", "retry_after": 2}]})
    with pytest.raises(openai.RateLimitError) as info:
        oai_stream(server)
    assert info.value.response.headers["retry-after"] == "2"
    body = info.value.response.json()
    assert body["error"]["message"] == "slow down"
    assert {"message", "type", "code"} <= set(body["error"])


def test_anthropic_authentication_error(serve):
    server = serve({"replies": [{"status": 401, "error_message": "bad key"}]})
    with pytest.raises(anthropic.AuthenticationError) as info:
        ant(server).messages.create(
            model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}], stream=True
        )
    assert info.value.body["error"] == {"type": "authentication_error", "message": "bad key"}
    assert info.value.response.json()["type"] == "error"


def test_error_body_override(serve):
    body = {
        "error": {
            "code": 401,
            "status": "UNAUTHENTICATED",
            "details": [{"reason": "ACCESS_TOKEN_TYPE_UNSUPPORTED"}],
        }
    }
    server = serve({"replies": [{"status": 401, "error_body": body}]})
    with pytest.raises(openai.AuthenticationError) as info:
        oai_stream(server)
    assert info.value.response.json() == body


def test_exhausted_script_answers_500(serve):
    server = serve({"replies": [{"text": "only once"}]})
    assert collect_openai(oai_stream(server))["text"] == "only once"
    with pytest.raises(openai.InternalServerError) as info:
        oai_stream(server)
    assert "scripted server: script exhausted" in str(info.value)
    with pytest.raises(anthropic.InternalServerError):
        ant(server).messages.create(
            model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )


def test_drop_after_breaks_the_stream(serve):
    server = serve({"replies": [{"text": "x" * 100, "chunk_size": 1, "drop_after": 5}] * 2})
    got = {"finish": None, "text": ""}
    with pytest.raises(CONNECTION_ERRORS):
        for chunk in oai_stream(server):
            if chunk.choices:
                got["text"] += chunk.choices[0].delta.content or ""
                got["finish"] = got["finish"] or chunk.choices[0].finish_reason
    assert got["finish"] is None and 0 < len(got["text"]) < 100
    with pytest.raises(CONNECTION_ERRORS):  # noqa: SIM117
        with ant(server).messages.stream(
            model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        ) as stream:
            stream.get_final_message()
    # the server survived both
    server.set_script(Script.from_dict({"replies": [{"text": "still here"}]}))
    assert collect_openai(oai_stream(server))["text"] == "still here"


def test_omit_finish_ends_without_finish_reason(serve):
    server = serve({"replies": [{"text": "truncated", "omit_finish": True}] * 2})
    got = collect_openai(oai_stream(server))
    assert got["text"] == "truncated" and got["finish"] is None
    events = list(
        ant(server).messages.create(
            model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}], stream=True
        )
    )
    assert "message_stop" not in [e.type for e in events]
    assert "message_delta" not in [e.type for e in events]


def test_malformed_chunk_fails_sdk_parsing(serve):
    server = serve(
        {"replies": [{"text": "hello world", "chunk_size": 2, "malformed_after": 2}] * 2}
    )
    with pytest.raises(json.JSONDecodeError):
        collect_openai(oai_stream(server))
    with pytest.raises(json.JSONDecodeError):
        list(
            ant(server).messages.create(
                model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}], stream=True
            )
        )


# -- HTTP mechanics ----------------------------------------------------------------------------


def _post(conn, body):
    conn.request(
        "POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"}
    )
    resp = conn.getresponse()
    return resp, resp.read()


def test_keep_alive_reuses_one_connection(serve):
    server = serve({"replies": [{"text": "one"}, {"text": "two", "chunk_size": 1}]})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    resp1, data1 = _post(conn, body)
    assert resp1.status == 200 and resp1.getheader("transfer-encoding") == "chunked"
    assert data1.endswith(b"data: [DONE]\n\n")
    _, data2 = _post(conn, dict(body, stream=False))
    assert json.loads(data2)["choices"][0]["message"]["content"] == "two"
    conn.close()
    assert server.connections_accepted == 1


def test_request_log(serve):
    server = serve({"replies": [{"text": "a"}, {"text": "b"}]})
    collect_openai(oai_stream(server, "first question", tools=[TOOL]))
    ant(server).messages.create(
        model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "second"}]
    )
    first, second = server.requests
    assert (first.method, first.path, first.wire) == ("POST", "/v1/chat/completions", "openai")
    assert first.headers["authorization"] == "Bearer x"
    assert first.body["messages"][-1]["content"] == "first question"
    assert first.body["tools"] == [TOOL] and json.loads(first.raw) == first.body
    assert second.path.startswith("/v1/messages") and second.wire == "anthropic"
    assert "anthropic-version" in second.headers and second.body["model"] == "claude-x"
    assert "x" in (second.headers.get("x-api-key"), second.headers.get("authorization", "")[7:])


def _stream_lines_in_thread(server, sink):
    """Read a raw streamed response on a thread, putting each SSE event into sink."""

    def run():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
            conn.request("POST", "/v1/chat/completions", json.dumps(body))
            resp = conn.getresponse()
            while line := resp.readline():
                if line.startswith(b"data: "):
                    sink.put(line)
        except (OSError, http.client.HTTPException):
            pass
        finally:
            sink.put(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_gate_blocks_until_opened(serve):
    server = serve(
        {"replies": [{"text": "abcdef", "chunk_size": 1, "gate": "g1", "gate_after": 2}]}
    )
    sink: queue.Queue = queue.Queue()
    thread = _stream_lines_in_thread(server, sink)
    first_two = [sink.get(timeout=5), sink.get(timeout=5)]
    assert all(first_two)
    with pytest.raises(queue.Empty):
        sink.get(timeout=0.3)  # held at the gate
    server.open_gate("g1")
    rest = []
    while (item := sink.get(timeout=5)) is not None:
        rest.append(item)
    thread.join(5)
    assert rest[-1] == b"data: [DONE]\n"
    # the first two chunks were the role chunk and "a"; the other five letters follow
    assert b"".join(rest).count(b'"content":') == 5


def test_a_gate_opens_from_another_process_over_http(serve):
    """A test driving the server in its own process opens a gate with a POST (not recorded)."""
    server = serve(
        {"replies": [{"text": "abcdef", "chunk_size": 1, "gate": "g1", "gate_after": 2}]}
    )
    sink: queue.Queue = queue.Queue()
    thread = _stream_lines_in_thread(server, sink)
    assert all([sink.get(timeout=5), sink.get(timeout=5)])
    control = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    control.request("POST", "/_control/open_gate/g1")
    assert json.loads(control.getresponse().read()) == {"opened": "g1"}
    control.close()
    rest = []
    while (item := sink.get(timeout=5)) is not None:
        rest.append(item)
    thread.join(5)
    assert rest[-1] == b"data: [DONE]\n"
    assert [r.path for r in server.requests_for()] == ["/v1/chat/completions"]


# A stop must not wait out a stall or a gate. It is given a join timeout of a minute, so a
# stall it failed to wake would cost that minute: the stopped handler threads prove the joins
# ended, and the 15 s bound (a quarter of the join) holds on a loaded machine.
STOP_JOIN_SECONDS = 60.0
STOPPED_WITHIN = 15.0


def test_stop_during_stall_is_prompt(serve):
    server = serve({"replies": [{"text": "abc", "stall": 120, "stall_after": 1}]})
    sink: queue.Queue = queue.Queue()
    thread = _stream_lines_in_thread(server, sink)
    assert sink.get(timeout=5) is not None  # the stream started, then stalls
    started = time.monotonic()
    server.stop(timeout=STOP_JOIN_SECONDS)
    assert time.monotonic() - started < STOPPED_WITHIN
    assert not any(handler.is_alive() for handler in server._threads)
    thread.join(10)
    assert not thread.is_alive()


def test_stop_releases_a_gate_and_idle_keepalive(serve):
    server = serve({"replies": [{"text": "abc", "gate": "never", "gate_after": 1}]})
    idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    idle.request("GET", "/health")
    assert idle.getresponse().read() == b'{"status": "ok"}'
    sink: queue.Queue = queue.Queue()
    thread = _stream_lines_in_thread(server, sink)
    assert sink.get(timeout=5) is not None  # one chunk, then held at the gate
    started = time.monotonic()
    server.stop(timeout=STOP_JOIN_SECONDS)
    assert time.monotonic() - started < STOPPED_WITHIN
    assert not any(handler.is_alive() for handler in server._threads)
    thread.join(10)
    assert not thread.is_alive()


def test_stop_returns_even_when_the_accept_loop_is_stuck(serve):
    # A client that resets between select() and accept() leaves the serve thread blocked in
    # accept(); socketserver's shutdown() then waits forever, and so did every test's
    # teardown. Here the accept is held on an event to make that moment certain.
    server = serve({"replies": [{"text": "abc"}]})
    entered, held = threading.Event(), threading.Event()
    accept = server._httpd.get_request

    def stuck_accept():
        entered.set()
        held.wait(30)
        return accept()

    server._httpd.get_request = stuck_accept
    client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        assert entered.wait(5)
        stopper = threading.Thread(target=server.stop, kwargs={"timeout": 0.3}, daemon=True)
        stopper.start()
        stopper.join(5)
        returned = not stopper.is_alive()
    finally:
        held.set()
        client.close()
    assert returned, "stop() hung behind a serve thread stuck in accept()"


def test_client_hanging_up_mid_stream_is_harmless(serve, capsys):
    server = serve({"replies": [{"text": "z" * 5000, "chunk_size": 1}, {"text": "next"}]})
    stream = oai_stream(server)
    next(iter(stream))
    stream.close()
    assert collect_openai(oai_stream(server))["text"] == "next"
    assert server.connections_accepted == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err


def test_demo_tour_over_openai(serve):
    script = Script.load_demo()
    script.defaults = {"chunk_size": 64, "delay": 0.0}  # the tour at full speed
    server = serve(script)
    client = oai(server)
    ids = []
    for _ in range(2):
        first = collect_openai(oai_stream(server, "hello", tools=[TOOL]))
        call = first["calls"][0]
        assert call["name"] == "list_dir" and json.loads(call["args"]) == {"path": "."}
        assert first["reasoning"] and first["finish"] == "tool_calls"
        ids.append(call["id"])
        messages = [
            {"role": "user", "content": "hello"},
            {
                "role": "assistant",
                "content": first["text"],
                "tool_calls": [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {"name": "list_dir", "arguments": call["args"]},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call["id"], "content": "a.py"},
        ]
        answer = client.chat.completions.create(model="demo", messages=messages)
        assert "```yaml" in answer.choices[0].message.content
    assert len(set(ids)) == 2


def test_many_chunks_stream_fast(serve):
    n = 20_000
    server = serve({"replies": [{"text": "x" * n, "chunk_size": 1}]})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    started = time.monotonic()
    _, data = _post(conn, body)
    elapsed = time.monotonic() - started
    assert data.count(b'"content":"x"') == n
    assert elapsed < 5.0


# -- TLS and standalone ------------------------------------------------------------------------


def _self_signed(tmp_path: Path) -> tuple[str, str]:
    from agent.scripted.certs import OpenSSLMissing, self_signed_cert

    try:
        return self_signed_cert(tmp_path)
    except OpenSSLMissing:
        pytest.skip("openssl is not available")


def test_tls(serve, tmp_path):
    certfile, keyfile = _self_signed(tmp_path)
    server = serve({"replies": [FULL]}, certfile=certfile, keyfile=keyfile)
    assert server.url.startswith("https://")
    context = ssl.create_default_context(cafile=certfile)
    with httpx2.Client(verify=context) as http:
        client = openai.OpenAI(
            base_url=server.openai_base_url, api_key="x", max_retries=0, http_client=http
        )
        got = collect_openai(
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert got["text"] == FULL["text"] and got["finish"] == "tool_calls"
    with pytest.raises(CONNECTION_ERRORS), httpx2.Client() as http:  # unverified: refused
        http.get(server.url + "/health")


PROCESS_BOUND = 45.0
"""How long a fresh interpreter gets to start or to end, on a loaded machine: the standalone
test is about what the process prints and its exit code, never its speed."""


def test_standalone_main(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("loop: true\nreplies:\n  - echo: true\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    # The ready line is read on a thread, so that its wait has a bound (a readline has none).
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=PROCESS_BOUND)
        assert line.startswith("scripted server listening on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1].strip()
        with openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "standalone"}]
            )
        assert reply.choices[0].message.content == "echo: standalone"
        # The server is ready and its one client has hung up: SIGINT finds it in its wait.
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=PROCESS_BOUND) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
