"""A hostile reply is bounded: one SSE line, tool calls per reply, argument size (H6).

The scripted server plays each hostile reply twice (a hostile model repeats itself), then
an innocent answer that only a regression would reach. Each attempt must end as soon as a
bound is passed, with memory bounded; the attempt is retried once, and the user gets one
sentence.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from helpers import run_headless, write_config

from agent import events as ev
from agent.config import load_config
from agent.loop import Agent
from agent.scripted import Script, ScriptedServer

MB = 1024 * 1024
_CHUNK = 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'


def text_line(size: int) -> dict:
    """A reply whose answer text arrives in one SSE line of about `size` bytes."""
    return {
        "raw_sse": [
            _CHUNK + '"delta":{"content":"',
            {"repeat": "x", "times": size},
            '"},"finish_reason":null}]}\n\n',
            _CHUNK + '"delta":{},"finish_reason":"stop"}]}\n\n',
            "data: [DONE]\n\n",
        ]
    }


def many_calls(count: int) -> dict:
    calls = [{"id": f"c{i}", "name": "list_dir", "arguments": {"path": "."}} for i in range(count)]
    return {"tool_calls": calls, "chunk_size": 4096}


def big_arguments(size: int) -> dict:
    arguments = {"path": "notes.txt", "content": "y" * size}
    call = {"id": "w1", "name": "write_file", "arguments": arguments}
    return {"tool_calls": [call], "chunk_size": 64 * 1024}


def twice(reply: dict) -> dict:
    """A script: the hostile reply on the first attempt and its retry, then a plain answer."""
    return {"replies": [reply, reply, {"text": "a regression let the reply through"}]}


HOSTILE = {
    "a 50 MB line": (text_line(50 * MB), "a stream line over 8 MB"),
    "200 tool calls": (many_calls(200), "more than 128 tool calls in one reply"),
    "a 2 MB argument": (big_arguments(2 * MB), "tool call arguments over 1 MB"),
}


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.mark.parametrize("name", list(HOSTILE))
def test_headless_a_hostile_reply_is_one_sentence_and_nothing_hangs(hermes_home, workspace, name):
    reply, limit = HOSTILE[name]
    with ScriptedServer(Script.from_dict(twice(reply))) as server:
        write_config(hermes_home, server)
        proc = run_headless(hermes_home, workspace, "go", timeout=60)
        attempts = len(server.requests_for())
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("hermes-tui:")]
    assert errors == [
        f"hermes-tui: scripted sent a reply over a safety limit ({limit}), so it was refused; "
        "ask again, or switch models if it keeps happening."
    ]
    assert attempts == 2  # retried once: a second sample may behave, a third rarely does
    assert not (workspace / "notes.txt").exists()  # nothing of the refused reply ran


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("name", ["200 tool calls", "a 2 MB argument"])
def test_tool_call_bounds_hold_on_both_wires(hermes_home, workspace, wire, name):
    reply, limit = HOSTILE[name]
    events: list = []
    with ScriptedServer(Script.from_dict(twice(reply))) as server:
        write_config(hermes_home, server, wire=wire)
        agent = Agent(load_config(), sink=events.append, workspace=workspace)
        try:
            result = agent.run_turn("go")
        finally:
            agent.close()
        attempts = len(server.requests_for())
    assert result.status == "error"
    assert f"({limit})" in result.error
    assert [type(e).__name__ for e in events if isinstance(e, ev.TurnError | ev.ToolStarted)] == [
        "TurnError"
    ]
    assert attempts == 2


def _one_turn(home, workspace, reply) -> tuple[object, float, int, int]:
    """(result, seconds, peak traced bytes, requests) of one turn against `reply`."""
    with ScriptedServer(Script.from_dict(twice(reply))) as server:
        # A 7 MB answer is normal here: the answer bound (H10, 4 MB by default) is raised.
        write_config(home, server, agent={"max_answer_mb": 16})
        agent = Agent(load_config(), workspace=workspace)
        tracemalloc.start()
        try:
            start = time.perf_counter()
            result = agent.run_turn("go")
            seconds = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            agent.close()
        return result, seconds, peak, len(server.requests_for())


def test_a_50_mb_line_costs_less_than_a_normal_7_mb_answer(hermes_home, workspace):
    # Side by side, so a loaded machine slows both: the hostile turn reads at most 8 MB per
    # attempt and holds no more than that, where the normal one keeps its whole answer.
    normal, normal_s, normal_peak, _ = _one_turn(hermes_home, workspace, text_line(7 * MB))
    hostile, hostile_s, hostile_peak, attempts = _one_turn(
        hermes_home, workspace, text_line(50 * MB)
    )
    assert normal.status == "ok" and len(normal.text) == 7 * MB
    assert hostile.status == "error" and "a stream line over 8 MB" in hostile.error
    assert attempts == 2
    assert hostile_peak < normal_peak, (hostile_peak, normal_peak)
    # Typically 20 times faster; the margin keeps a burst of load on one side from failing it.
    assert hostile_s < 2 * normal_s + 1.0, (hostile_s, normal_s)
