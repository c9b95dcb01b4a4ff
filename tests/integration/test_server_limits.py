"""Local servers' own limits and errors in whole turns (issue 16: items 3, 4, 6 and 7).

The scripted server plays llama.cpp, vLLM, Ollama and LM Studio (agent/scripted/personas.py):
their discovery endpoints, their usage shapes and their exact error bodies, over real HTTP
through the real SDKs, on real SQLite.
"""

from __future__ import annotations

import itertools
import json
import socket
import time

import pytest
import yaml

from agent import events as ev
from agent.config import load_config
from agent.kinds import ErrorKind
from agent.loop import Agent
from agent.messages import REQUEST_FAILED, model_visible, to_openai

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}
FILL = "lorem ipsum " * 20


def summary_reply(text="SUMMARY: the user asked questions and got answers.") -> dict:
    return {"match": SUMMARY_RULE, "text": text}


def persona(name="llama.cpp", models=("test-model",), window=4096, **extra) -> dict:
    return {"persona": name, "models": list(models), "context_window": window, **extra}


def of(harness, kind) -> list:
    return [e for e in harness.events if isinstance(e, kind)]


def notices(harness, needle: str) -> list[str]:
    return [e.text for e in of(harness, ev.Notice) if needle in e.text]


def user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def chat_requests(harness) -> list:
    return [r for r in harness.server.requests if r.path.endswith("/chat/completions")]


def model_bodies(harness) -> list[dict]:
    return [b for b in harness.bodies() if "You summarise a conversation" not in json.dumps(b)]


# -- item 3: the context meter tells the truth -------------------------------------------------
def test_the_meter_counts_cached_tokens_on_the_anthropic_wire(harness):
    usage = {"input_tokens": 18, "cache_read_input_tokens": 1324, "output_tokens": 10}
    agent = harness.start(
        {"replies": [{"text": "hi", "usage": usage}], "server": persona(window=4096)},
        wire="anthropic",
    )
    assert agent.run_turn("hello").status == "ok"
    (event,) = of(harness, ev.UsageUpdated)
    assert event.input_tokens == 18  # the wire's own figure, as stored and priced
    assert event.context_tokens == 18 + 1324 + 10
    assert event.context_window == 4096  # llama.cpp said so; nothing configured
    assert round(event.context_tokens / event.context_window * 100) == 33  # not 1 %


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def test_the_meter_counts_cached_tokens_given_again_in_message_delta(harness):
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 5},
        },
    }
    text = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "hi"},
    }
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 1000, "output_tokens": 2},
    }
    raw = [
        sse("message_start", start),
        sse("content_block_delta", text),
        sse("message_delta", delta),
        sse("message_stop", {"type": "message_stop"}),
    ]
    agent = harness.start({"replies": [{"raw_sse": raw}]}, wire="anthropic")
    assert agent.run_turn("hello").status == "ok"
    (event,) = of(harness, ev.UsageUpdated)
    assert event.context_tokens == 5 + 1000 + 2


def test_the_meter_takes_the_openai_wires_prompt_tokens_whole(harness):
    usage = {"prompt_tokens": 1342, "cached_tokens": 1324, "completion_tokens": 10}
    agent = harness.start(
        {"replies": [{"text": "hi", "usage": usage}], "server": persona("vllm", window=4096)}
    )
    assert agent.run_turn("hello").status == "ok"
    (event,) = of(harness, ev.UsageUpdated)
    assert (event.context_tokens, event.context_window) == (1352, 4096)


@pytest.mark.parametrize("name", ["llama.cpp", "vllm", "ollama", "lmstudio"])
def test_one_window_from_the_server_feeds_the_meter_and_compaction(harness, name):
    agent = harness.start({"replies": [{"text": "hi"}], "server": persona(name, window=3000)})
    assert agent.context_window is None  # not asked yet: nothing is assumed
    assert agent.run_turn("hello").status == "ok"
    assert agent.context_window == 3000
    assert agent.compressor.measure(agent)[1] == 3000
    assert of(harness, ev.UsageUpdated)[-1].context_window == 3000


def test_the_config_wins_over_the_server(harness):
    agent = harness.start(
        {"replies": [{"text": "hi"}], "server": persona(window=3000)},
        provider={"context_window": 1234},
    )
    agent.run_turn("hello")
    assert agent.context_window == 1234


def test_an_unknown_window_is_unknown_and_compaction_says_what_it_assumes(harness):
    agent = harness.start({"replies": [{"text": "a"}, {"text": "b"}]})  # no discovery endpoint
    big = "x" * 110_000  # over 75 % of the assumed 32,768 tokens
    agent.run_turn(big)
    agent.run_turn(big)
    assert agent.context_window is None
    assert of(harness, ev.UsageUpdated)[-1].context_window is None
    told = notices(harness, "compaction assumes 32,768 tokens")
    assert len(told) == 1  # said once, and only once it matters


# -- item 4: the server's own limit ------------------------------------------------------------
def seeded(harness, replies, *, window=2048, seed=3, wire="openai"):
    """A session of `seed` turns on a llama-server that tells its window only when it overflows."""
    answers = [{"text": f"answer {i} {FILL}"} for i in range(seed)]
    server = persona(window=window, extra={"discovery": False})
    script = {"replies": [summary_reply(), *answers, *replies], "server": server}
    agent = harness.start(script, wire=wire)
    for i in range(seed):
        assert agent.run_turn(f"question {i} {FILL}").status == "ok"
    return agent


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_overflow_compacts_once_and_the_retry_answers(harness, wire):
    overflow = {"server_error": "context_overflow"}
    agent = seeded(harness, [overflow, {"text": "fits now"}], wire=wire)
    result = agent.run_turn(f"question 3 {FILL}")
    assert result.status == "ok", result.error
    assert result.text == "fits now"
    told = notices(harness, "compacting it and retrying once")
    assert told and "2,048 tokens" in told[0]
    assert of(harness, ev.CompactionFinished)[-1].ok
    # The window llama.cpp named is now the window: compaction measures against it.
    assert agent.context_window == 2048


def test_an_overflow_that_compaction_cannot_cure_advises_and_is_never_merged(harness):
    """K2: the /compact advice; T7: the failed text is withheld, roles alternate; D3 on resume."""
    overflow = {"server_error": "context_overflow"}
    agent = seeded(harness, [overflow, overflow, {"text": "short one answered"}])
    result = agent.run_turn("paste of a huge file " + FILL)
    assert result.status == "error"
    assert "/compact" in result.error and "/new" in result.error
    errors = of(harness, ev.TurnError)
    assert errors[-1].kind == ErrorKind.CONTEXT_LENGTH
    assert result.withheld == "paste of a huge file " + FILL
    # History stays honest: the user's text is stored, and so is the row that withholds it.
    rows = harness.rows(agent.session_id)
    assert rows[-2]["content"] == result.withheld
    assert rows[-1]["display_kind"] == REQUEST_FAILED
    assert rows[-1]["display_metadata"]["withheld"] == 1
    # The next turn sends its own text alone: no merged user message, roles alternate.
    assert agent.run_turn("a short question").status == "ok"
    last = model_bodies(harness)[-1]
    assert user_texts(last)[-1] == "a short question"
    assert "huge file" not in json.dumps(last)
    roles = [m["role"] for m in last["messages"] if m["role"] != "system"]
    assert all(a != b for a, b in itertools.pairwise(roles))
    # A resumed agent sees the same: the stored row withholds the failed text again.
    other = harness.agent()
    other.resume(agent.session_id)
    system = agent.request().system
    assert to_openai(other.messages, system) == to_openai(agent.messages, system)
    assert not other.interrupted


def test_failed_turns_never_pile_up_into_one_user_message(harness):
    """T7: payload alternation holds without merging a failed turn's text into the next."""
    down = {"status": 500, "error_message": "model crashed"}
    agent = harness.start({"replies": [down] * 2 + [{"text": "finally"}]}, agent={"max_retries": 1})
    assert agent.run_turn("first try").status == "error"
    assert agent.run_turn("second try").status == "error"
    assert agent.run_turn("third try").status == "ok"
    assert user_texts(harness.bodies()[-1]) == ["third try"]
    assert [m.content for m in model_visible(agent.messages)] == ["third try", "finally"]


def test_a_summary_never_merges_into_a_withheld_message(harness):
    """C5 with a withheld message where the kept tail would start: the summary stays sent."""
    down = {"status": 500, "error_message": "model crashed"}
    # Long answers: a summary commits only when it makes the next request smaller (C2).
    answers = [{"text": f"answer {i} " + "and so on " * 60} for i in range(3)]
    agent = harness.start(
        {"replies": [summary_reply("THE-SUMMARY"), *answers, down, {"text": "answer 3"}]},
        agent={"max_retries": 1},
        compression={"protect_first": 2, "keep_recent": 3},
    )
    for i in range(3):
        assert agent.run_turn(f"question {i}").status == "ok"
    assert agent.run_turn("this one fails").status == "error"
    assert agent.run_turn("question 3").status == "ok"
    assert agent.compact().ok
    sent = to_openai(agent.messages, "system")
    assert "THE-SUMMARY" in json.dumps(sent)
    assert "this one fails" not in json.dumps(sent)
    roles = [m["role"] for m in sent[1:]]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_a_wrong_base_url_path_says_the_url_looks_wrong(harness):
    """K2: a 404 at a wrong path is about the URL, not the model; W8: it is not retried."""
    agent = harness.start({"replies": [{"text": "never"}], "server": persona()})
    name = agent.provider_name
    base = agent.config.providers[name].base_url
    import dataclasses

    agent.config.providers[name] = dataclasses.replace(
        agent.config.providers[name], base_url=base + "/v1"
    )
    result = agent.run_turn("hello")
    assert result.status == "error"
    assert "base_url looks wrong" in result.error and "File Not Found" in result.error
    assert "does not know model" not in result.error
    assert len(chat_requests(harness)) == 1  # a wrong URL is not retried


def test_lm_studio_answers_a_wrong_path_with_json_and_it_is_read(harness):
    agent = harness.start({"replies": [{"text": "never"}], "server": persona("lmstudio")})
    name = agent.provider_name
    root = agent.config.providers[name].base_url.removesuffix("/v1")
    import dataclasses

    agent.config.providers[name] = dataclasses.replace(
        agent.config.providers[name], base_url=root + "/api"
    )
    result = agent.run_turn("hello")
    assert "base_url looks wrong" in result.error and "Unexpected endpoint" in result.error
    assert len(chat_requests(harness)) == 1  # not taken as a truncated stream and retried


# -- item 6: the server's models --------------------------------------------------------------
def test_a_single_model_llama_server_is_recorded_under_the_model_it_serves(harness):
    served = "SmolLM2-135M-Instruct.Q4_1.gguf"
    agent = harness.start(
        {"replies": [{"text": "hi"}], "server": persona(models=[served])}, model="smol"
    )
    assert agent.run_turn("hello").status == "ok"
    (warning,) = notices(harness, "serves one model")
    assert repr(served) in warning and "'smol'" in warning
    # Told before the first request, and the request and the session carry the served id.
    kinds = [type(e) for e in harness.events]
    assert kinds.index(ev.Notice) < kinds.index(ev.RequestStarted)
    assert harness.server.requests[0].body["model"] == served
    session = harness.loop.run(harness.db.get_session(agent.session_id))
    assert session["model"] == served
    assert agent.model_ref == f"scripted:{served}"


def test_a_model_the_server_does_not_list_is_warned_about_once(harness):
    agent = harness.start(
        {"replies": [{"text": "a"}, {"text": "b"}], "server": persona("vllm", models=["x", "y"])},
        model="z",
    )
    agent.run_turn("one")
    agent.run_turn("two")
    (warning,) = notices(harness, "does not list model 'z'")
    assert "it lists x, y" in warning
    assert agent.model_ref == "scripted:z"  # a server that checks names keeps the user's


@pytest.mark.parametrize(("name", "model"), [("vllm", "x"), ("ollama", "qwen2.5")])
def test_a_listed_model_gets_no_warning(harness, name, model):
    models = ["x"] if name == "vllm" else ["qwen2.5:latest"]
    agent = harness.start(
        {"replies": [{"text": "a"}], "server": persona(name, models=models)}, model=model
    )
    agent.run_turn("one")
    assert not notices(harness, "list")


# -- item 7: a wrong port reports at once ------------------------------------------------------
def test_a_wrong_port_on_loopback_reports_after_one_attempt(hermes_home, tmp_path):
    """W8 bounds retries; nothing listening on loopback is worth one attempt, not five."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    config = {
        "model": "local:m",
        # The default retry settings: five attempts, one second of base backoff.
        "providers": {"local": {"base_url": f"http://127.0.0.1:{port}/v1", "api_key": "k"}},
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config))
    events: list[ev.AgentEvent] = []
    agent = Agent(load_config(), sink=events.append, workspace=tmp_path)
    started = time.monotonic()
    result = agent.run_turn("hello")
    elapsed = time.monotonic() - started
    agent.close()
    assert result.status == "error"
    assert "Nothing is listening" in result.error and "fix the port" in result.error
    # Counted, not timed: one attempt and no retry, where the defaults would take five
    # attempts and 1 + 2 + 4 + 8 = 15 s of backoff; the bound leaves a loaded machine room.
    attempts = [e for e in events if isinstance(e, ev.RequestStarted)]
    retries = [e for e in events if isinstance(e, ev.Retrying)]
    assert (len(attempts), retries) == (1, []), (attempts, retries)
    assert elapsed < 10, elapsed
