"""Input while the agent works: steer, redirect, stop and their races (T1-T7, R2)."""

from __future__ import annotations

import json
import threading

import pytest
from waits import wait_until

from agent import events as ev

SECRET = "HIDDEN-THOUGHT-91"


def tool_reply(call_id="c1", **extra):
    return {
        "tool_calls": [{"id": call_id, "name": "list_dir", "arguments": {"path": "."}}],
        **extra,
    }


def shell_reply(call_id="c1"):
    """A tool call that needs approval in `ask` mode, so the approve callback runs mid-batch."""
    return {"tool_calls": [{"id": call_id, "name": "run_shell", "arguments": {"command": "true"}}]}


def start_turn(agent, text="go"):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", agent.run_turn(text)))
    thread.start()

    def join():
        thread.join(15)
        assert not thread.is_alive(), "run_turn did not return"
        return box["result"]

    return join


def user_texts(body):
    out = []
    for m in body["messages"]:
        if m["role"] != "user":
            continue
        content = m["content"]
        if isinstance(content, list):
            content = " ".join(b.get("text", "") for b in content if b.get("type") == "text")
        out.append(content)
    return out


def streamed(harness, kind=ev.TextDelta):
    return lambda: any(isinstance(e, kind) for e in harness.events)


# -- T3: the shared terminal path ---------------------------------------------------------------

EXITS = {
    "normal end": ({"replies": [{"text": "done"}]}, {}, "ok"),
    "output truncation": (
        {"replies": [{"text": "cut", "finish_reason": "length"}]},
        {},
        "truncated",
    ),
    "iteration budget": ({"replies": [tool_reply()]}, {"max_iterations": 1}, "budget"),
    "provider error": ({"replies": [{"status": 401}]}, {}, "error"),
    "output-cap rejection": (
        {
            "replies": [
                {
                    "status": 400,
                    "error_message": "max_tokens: 200000 > 64000, the maximum output tokens",
                }
            ]
        },
        {},
        "error",
    ),
    "empty answers": ({"replies": [{"text": ""}, {"text": ""}]}, {}, "error"),
}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("exit_name", sorted(EXITS))
def test_every_terminal_exit_seals_and_drains(harness, exit_name, wire):
    script, settings, status = EXITS[exit_name]
    agent = harness.start(script, wire=wire, agent=settings)
    seals = []
    original = agent.inbox.seal_and_drain

    def spy():
        seals.append(1)
        return original()

    agent.inbox.seal_and_drain = spy
    agent.probes.before_seal = lambda: agent.steer(f"late steer for {exit_name}")
    result = agent.run_turn("go")
    assert result.status == status
    assert seals == [1]
    assert result.pending_steer == f"late steer for {exit_name}"
    assert agent.steer("after the seal") is False
    for request in harness.server.requests:
        assert b"late steer" not in request.raw


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_stop_and_redirect_exits_seal_and_drain(harness, wire):
    agent = harness.start(
        {"replies": [{"text": "streaming slowly", "chunk_size": 2, "gate": "g", "gate_after": 6}]},
        wire=wire,
    )
    agent.probes.before_seal = lambda: agent.steer("late")
    join = start_turn(agent)
    wait_until(streamed(harness))
    agent.stop()
    result = join()
    assert result.status == "stopped"
    assert result.pending_steer == "late"


def test_steer_during_tools_is_delivered_once_after_the_batch(harness):
    """T2: a steer sent while tools run is delivered after the batch, once, as user text."""
    agent = harness.start({"replies": [shell_reply(), {"text": "ok"}]}, agent={"approval": "ask"})

    def approve(_request):
        assert agent.steer("also check the tests") is True
        return True

    agent.approve = approve
    result = agent.run_turn("go")
    assert result.status == "ok" and result.pending_steer is None
    second = harness.server.requests[1].body
    assert user_texts(second) == ["go", "also check the tests"]
    assert [m["role"] for m in second["messages"][-3:]] == ["assistant", "tool", "user"]
    rows = harness.rows(result.session_id)
    assert [r["content"] for r in rows if r["role"] == "user"] == ["go", "also check the tests"]
    assert any(isinstance(e, ev.DisplayRow) and e.kind == "steer" for e in harness.events)


def test_steer_during_the_stream_lands_before_the_next_model_call(harness):
    """T2: a steer sent while the model streams lands before the next model call."""
    agent = harness.start({"replies": [tool_reply(gate="g", gate_after=0), {"text": "ok"}]})
    join = start_turn(agent)
    wait_until(lambda: len(harness.server.requests) == 1)
    assert agent.steer("use the new API") is True
    harness.server.open_gate("g")
    result = join()
    assert user_texts(harness.server.requests[1].body) == ["go", "use the new API"]
    assert result.pending_steer is None


def test_steer_on_the_final_answer_comes_back_pending_not_lost(harness):
    agent = harness.start(
        {"replies": [{"text": "final answer " * 10, "chunk_size": 4, "gate": "g", "gate_after": 6}]}
    )
    join = start_turn(agent)
    wait_until(streamed(harness))
    assert agent.steer("one more thing") is True
    harness.server.open_gate("g")
    result = join()
    assert result.status == "ok"
    assert result.pending_steer == "one more thing"
    assert all(b"one more thing" not in r.raw for r in harness.server.requests)


def test_t3_two_steers_pending_at_the_seal_come_back_joined_once_in_order(harness):
    """T3: every steer that won the lock before the seal is in `pending_steer`, in order."""
    agent = harness.start({"replies": [{"text": "done"}]})

    def two_late_steers():
        assert agent.steer("first late steer") is True
        assert agent.steer("second late steer") is True

    agent.probes.before_seal = two_late_steers
    result = agent.run_turn("go")
    assert result.status == "ok"
    assert result.pending_steer == "first late steer\n\nsecond late steer"
    assert agent.steer("after the seal") is False
    assert all(b"late steer" not in r.raw for r in harness.server.requests)


def test_command_shaped_steer_is_delivered_as_text(harness):
    """T4: a steer that looks like a command (`/stop`) reaches the model as text, never run."""
    agent = harness.start({"replies": [shell_reply(), {"text": "ok"}]}, agent={"approval": "ask"})
    agent.approve = lambda _r: agent.steer("/stop") or True
    result = agent.run_turn("go")
    assert result.status == "ok"
    assert user_texts(harness.server.requests[1].body)[-1] == "/stop"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_redirect_during_the_stream_keeps_visible_text_and_reruns(harness, wire):
    """T5: a redirect keeps the visible partial answer (R2), appends the correction, re-runs."""
    agent = harness.start(
        {
            "replies": [
                {
                    "reasoning": SECRET,
                    "text": "I will use perl",
                    "chunk_size": 3,
                    "gate": "g",
                    "gate_after": 14,
                },
                {"text": "Using python then."},
            ]
        },
        wire=wire,
    )
    join = start_turn(agent)
    wait_until(streamed(harness))
    assert agent.redirect("no, use python") is True
    result = join()
    assert result.status == "ok" and result.text == "Using python then."
    body = harness.server.requests[1].body
    roles = [m["role"] for m in body["messages"] if m["role"] != "system"]
    assert roles == ["user", "assistant", "user"]
    partial = json.dumps(body["messages"][-2])
    assert "I will" in partial and SECRET not in partial
    assert SECRET.encode() not in harness.server.requests[1].raw
    assert user_texts(body)[-1] == "no, use python"
    rows = harness.rows(result.session_id)
    assert [r["role"] for r in rows] == ["user", "assistant", "user", "assistant"]
    assert all(SECRET not in r["content"] for r in rows)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_interrupt_during_reasoning_leaves_no_assistant_text(harness, wire):
    agent = harness.start(
        {
            "replies": [
                {
                    "reasoning": SECRET * 4,
                    "text": "never",
                    "chunk_size": 4,
                    "gate": "g",
                    "gate_after": 6,
                },
                {"text": "fresh answer"},
            ]
        },
        wire=wire,
    )
    join = start_turn(agent)
    wait_until(streamed(harness, ev.ReasoningDelta))
    agent.redirect("think less")
    result = join()
    assert result.status == "ok"
    body = harness.server.requests[1].body
    # No assistant checkpoint at all; the two user turns merge so roles alternate (T7).
    assert [m["role"] for m in body["messages"] if m["role"] != "system"] == ["user"]
    assert "go" in json.dumps(body["messages"]) and "think less" in json.dumps(body["messages"])
    for request in harness.server.requests[1:]:
        assert SECRET.encode() not in request.raw
    rows = harness.rows(result.session_id)
    assert [r["role"] for r in rows] == ["user", "user", "assistant"]


def test_redirect_during_tools_degrades_to_a_steer(harness):
    """T5: during tool execution a redirect degrades to a steer."""
    agent = harness.start({"replies": [shell_reply(), {"text": "ok"}]}, agent={"approval": "ask"})
    agent.approve = lambda _r: agent.redirect("switch to plan B") or True
    result = agent.run_turn("go")
    assert result.status == "ok"
    second = harness.server.requests[1].body
    assert [m["role"] for m in second["messages"][-3:]] == ["assistant", "tool", "user"]
    assert user_texts(second)[-1] == "switch to plan B"


def test_stop_wins_over_a_concurrent_redirect_and_keeps_its_text(harness):
    """T5: a concurrent stop always wins over a redirect, and the redirect's text is kept."""
    for round_ in range(20):
        harness.events.clear()
        script = {
            "replies": [{"text": "streaming " * 5, "chunk_size": 2, "gate": "g", "gate_after": 6}]
        }
        from agent.scripted import Script

        if harness.server is None:
            agent = harness.start(script)
        else:
            harness.server.set_script(Script.from_dict(script))
            agent = harness.agent()
        join = start_turn(agent, f"round {round_}")
        wait_until(streamed(harness))
        barrier = threading.Barrier(2)
        outcome = {}

        def redirect():
            barrier.wait()
            outcome["redirect"] = agent.redirect("redirected text")

        def stop():
            barrier.wait()
            agent.stop()

        threads = [threading.Thread(target=redirect), threading.Thread(target=stop)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        result = join()
        assert result.status == "stopped"
        delivered = any(b"redirected text" in r.raw for r in harness.server.requests)
        assert not delivered
        if outcome["redirect"]:
            assert result.pending_steer == "redirected text"
        else:
            assert result.pending_steer is None


def test_stop_keeps_the_partial_answer(harness):
    full = "partial answer here " * 5
    agent = harness.start(
        {"replies": [{"text": full, "chunk_size": 4, "gate": "g", "gate_after": 6}]}
    )
    join = start_turn(agent)
    wait_until(streamed(harness))
    agent.stop()
    result = join()
    assert result.status == "stopped"
    shown = "".join(e.text for e in harness.events if isinstance(e, ev.TextDelta))
    assert shown and full.startswith(shown) and shown != full
    rows = harness.rows(result.session_id)
    assert rows[-2]["role"] == "assistant" and rows[-2]["content"] == shown
    assert rows[-1]["display_kind"] == "turn_stopped"  # the resumed transcript shows it
    assert result.text == shown


def test_stop_during_tools_gives_every_call_a_result(harness):
    calls = [
        {"id": f"c{i}", "name": "run_shell", "arguments": {"command": "true"}} for i in range(3)
    ]
    agent = harness.start(
        {"replies": [{"tool_calls": calls}, {"text": "never"}]}, agent={"approval": "ask"}
    )

    def approve(_request):
        agent.stop()
        return True

    agent.approve = approve
    result = agent.run_turn("go")
    assert result.status == "stopped"
    rows = harness.rows(result.session_id)
    assert [r["tool_call_id"] for r in rows if r["role"] == "tool"] == ["c0", "c1", "c2"]
    assert len(harness.server.requests) == 1


def test_stop_right_after_a_redirect_wins_and_returns_the_redirect_text(harness):
    """T5: a stop right after a redirect wins and hands the redirect's text back."""
    agent = harness.start(
        {"replies": [{"text": "streaming " * 5, "chunk_size": 2, "gate": "g", "gate_after": 6}]}
    )
    join = start_turn(agent)
    wait_until(streamed(harness))
    agent.probes.before_seal = lambda: None
    # The redirect lands first and aborts the stream; the stop arrives before the loop reacts.
    with agent.control.lock:
        assert agent.redirect("redirected text")
        agent.stop()
    result = join()
    assert result.status == "stopped"
    assert result.pending_steer == "redirected text"
    assert len(harness.server.requests) == 1
    assert agent.redirect("too late") is False
