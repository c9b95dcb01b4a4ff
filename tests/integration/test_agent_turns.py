"""Whole turns through the real SDKs over real HTTP, on real SQLite (A1-A7, R1, S1)."""

from __future__ import annotations

import json

import pytest
from helpers import unmarked
from waits import holds_for, wait_until

from agent import events as ev
from agent.scripted import Script

WIRES = ["openai", "anthropic"]
SECRET = "SECRET-REASONING-7f3a"


def tool_reply(call_id="call_1", name="list_dir", arguments=None, **extra):
    return {
        "tool_calls": [{"id": call_id, "name": name, "arguments": arguments or {"path": "."}}],
        **extra,
    }


@pytest.mark.parametrize("wire", WIRES)
def test_reasoning_text_and_tool_calls_split_and_persisted(harness, wire):
    """A2: reasoning, text and tool-call deltas arrive as separate events, on both wires."""
    agent = harness.start(
        {
            "replies": [
                {"reasoning": "I should list files.", "text": "Looking.", **tool_reply()},
                {"text": "Found README.md."},
            ]
        },
        wire=wire,
    )
    result = agent.run_turn("what is here?")
    assert result.status == "ok", result.error
    assert result.text == "Found README.md."
    kinds = [type(e) for e in harness.events]
    assert ev.ReasoningDelta in kinds and ev.TextDelta in kinds and ev.ToolStarted in kinds
    reasoning = "".join(e.text for e in harness.events if isinstance(e, ev.ReasoningDelta))
    assert reasoning == "I should list files."
    finished = [e for e in harness.events if isinstance(e, ev.ToolFinished)]
    assert finished[0].ok and "README.md" in finished[0].output
    rows = harness.rows(result.session_id)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1]["tool_calls"][0]["id"] == "call_1"
    assert rows[2]["tool_call_id"] == "call_1"
    assert "README.md" in rows[2]["content"]


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_openai_reasoning_arrives_under_either_extra(harness, key):
    """A2: OpenAI-wire reasoning is read from the `reasoning_content` and `reasoning` extras."""
    agent = harness.start(
        {"reasoning_key": key, "replies": [{"reasoning": "Weighing it up.", "text": "Yes."}]}
    )
    result = agent.run_turn("should I?")
    assert result.status == "ok" and result.text == "Yes."
    reasoning = "".join(e.text for e in harness.events if isinstance(e, ev.ReasoningDelta))
    assert reasoning == "Weighing it up."


@pytest.mark.parametrize("wire", WIRES)
def test_reused_tool_call_id_is_renamed_and_both_pairs_survive(harness, wire):
    """A3: a later call that reuses an id becomes `<id>_d1`; both call/result pairs survive."""
    agent = harness.start(
        {
            "replies": [
                tool_reply("call_x"),
                tool_reply("call_x", arguments={"path": "."}),
                {"text": "done"},
            ]
        },
        wire=wire,
    )
    result = agent.run_turn("list twice")
    assert result.status == "ok", result.error
    rows = harness.rows(result.session_id)
    call_ids = [c["id"] for r in rows if r["tool_calls"] for c in r["tool_calls"]]
    result_ids = [r["tool_call_id"] for r in rows if r["role"] == "tool"]
    assert call_ids == ["call_x", "call_x_d1"]
    assert result_ids == ["call_x", "call_x_d1"]
    last = json.dumps(harness.bodies()[-1])
    assert '"call_x"' in last and '"call_x_d1"' in last


@pytest.mark.parametrize("wire", WIRES)
def test_duplicate_ids_within_one_response_and_missing_ids(harness, wire):
    """A3: reused ids in one reply are renamed; a call without an id gets a deterministic one."""
    calls = [
        {"id": "dup", "name": "list_dir", "arguments": {"path": "."}},
        {"id": "dup", "name": "list_dir", "arguments": {"path": "."}},
    ]
    if wire == "openai":  # the anthropic wire always carries ids
        calls.append({"name": "list_dir", "arguments": {"path": "."}})
    agent = harness.start({"replies": [{"tool_calls": calls}, {"text": "ok"}]}, wire=wire)
    result = agent.run_turn("go")
    rows = harness.rows(result.session_id)
    ids = [c["id"] for c in rows[1]["tool_calls"]]
    assert ids[:2] == ["dup", "dup_d1"]
    assert len(set(ids)) == len(ids)
    if wire == "openai":
        assert ids[2].startswith("call_")
        # Deterministic: the same call at the same position gets the same derived id.
        from agent.messages import derived_call_id

        assert ids[2] == derived_call_id("list_dir", '{"path": "."}', 2)


@pytest.mark.parametrize("wire", WIRES)
def test_tool_result_is_persisted_before_the_next_model_call_finishes(harness, wire):
    agent = harness.start(
        {"replies": [tool_reply(), {"text": "after", "gate": "hold", "gate_after": 0}]},
        wire=wire,
    )
    import threading

    outcome = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("r", agent.run_turn("go")))
    worker.start()
    wait_until(lambda: len(harness.server.requests) == 2)
    # The writer is asynchronous; a flush is read-your-writes, and the gate still holds the call.
    harness.loop.run(harness.db.flush())
    rows = harness.rows(agent.session_id)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool"]
    harness.server.open_gate("hold")
    worker.join(10)
    assert outcome["r"].status == "ok"


@pytest.mark.parametrize("wire", WIRES)
def test_reasoning_never_reaches_the_database_or_a_later_turn(harness, wire):
    agent = harness.start(
        {
            "replies": [
                {"reasoning": SECRET + " thinking", **tool_reply()},
                {"reasoning": SECRET + " more", "text": "answer one"},
                {"text": "answer two"},
            ]
        },
        wire=wire,
    )
    first = agent.run_turn("first")
    second = agent.run_turn("second")
    assert first.status == second.status == "ok"
    harness.loop.run(harness.db.flush())
    for path in harness.home.glob("state.db*"):
        assert SECRET.encode() not in path.read_bytes(), path.name
    raw = [r.raw for r in harness.server.requests]
    # The next turn's request never carries reasoning, in any form.
    assert SECRET.encode() not in raw[2]
    if wire == "openai":
        assert SECRET.encode() not in raw[1]
    else:
        # Within the turn, Anthropic requires the signed thinking block back (A7) ...
        content = harness.bodies()[1]["messages"][1]["content"]
        assert content[0]["type"] == "thinking" and content[0]["signature"]
        # ... as a thinking block, never as text.
        assert all(SECRET not in b.get("text", "") for b in content if b["type"] == "text")
    assert not any(hasattr(agent, name) for name in ("reasoning", "reasoning_text"))


def test_unsigned_thinking_is_never_replayed(harness):
    agent = harness.start(
        {"replies": [{"reasoning": SECRET, "signature": "", **tool_reply()}, {"text": "ok"}]},
        wire="anthropic",
    )
    assert agent.run_turn("go").status == "ok"
    assert SECRET.encode() not in harness.server.requests[1].raw


@pytest.mark.parametrize("wire", WIRES)
def test_iteration_budget_ends_a_looping_script(harness, wire):
    """A1: the iteration budget ends a looping turn with a clear message (A3 renames each reuse)."""
    agent = harness.start(
        {"loop": True, "replies": [tool_reply("loop_call")]},
        wire=wire,
        agent={"max_iterations": 3},
    )
    result = agent.run_turn("loop forever")
    assert result.status == "budget"
    assert "iteration budget" in result.error
    assert len(harness.server.requests) == 3
    # The reused id is renamed each time, so every pair survives.
    rows = harness.rows(result.session_id)
    assert [r["tool_call_id"] for r in rows if r["role"] == "tool"] == [
        "loop_call",
        "loop_call_d1",
        "loop_call_d2",
    ]


def test_default_iteration_budget_is_500(hermes_home):
    from agent.config import DEFAULT_MAX_ITERATIONS, load_config

    assert DEFAULT_MAX_ITERATIONS == 500
    assert load_config().agent.max_iterations == 500


@pytest.mark.parametrize("wire", WIRES)
def test_empty_answer_is_nudged_once_and_never_persisted(harness, wire):
    """A6: an empty answer is retried once with an ephemeral nudge (D2) and never stored."""
    from agent.prompts import EMPTY_ANSWER_NUDGE

    agent = harness.start({"replies": [{"text": ""}, {"text": "now I answer"}]}, wire=wire)
    result = agent.run_turn("hello")
    assert result.status == "ok" and result.text == "now I answer"
    assert EMPTY_ANSWER_NUDGE in json.dumps(harness.bodies()[1])
    rows = harness.rows(result.session_id)
    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "hello"),
        ("assistant", "now I answer"),
    ]
    assert all(not m.ephemeral for m in agent.messages)
    # The nudge is gone from what the next turn sends.
    harness.server.set_script(Script.from_dict({"replies": [{"text": "x"}]}))
    agent.run_turn("again")
    assert EMPTY_ANSWER_NUDGE not in json.dumps(harness.bodies()[-1])


@pytest.mark.parametrize("wire", WIRES)
def test_two_empty_answers_report_an_error(harness, wire):
    """A6: a second empty answer is reported, and no empty assistant turn is stored."""
    agent = harness.start({"replies": [{"text": ""}, {"text": ""}]}, wire=wire)
    result = agent.run_turn("hello")
    assert result.status == "error"
    assert "empty answer" in result.error
    rows = harness.rows(result.session_id)
    # No empty assistant turn: the user message, and the row that says it went unanswered.
    assert [(r["role"], r["display_kind"]) for r in rows] == [
        ("user", None),
        ("assistant", "request_failed"),
    ]


@pytest.mark.parametrize("wire", WIRES)
def test_user_agent_header(harness, wire):
    """A5: every request carries `User-Agent: hermes-tui/<version>`."""
    from agent.version import USER_AGENT

    agent = harness.start({"replies": [{"text": "hi"}]}, wire=wire)
    agent.run_turn("hi")
    assert harness.server.requests[0].headers["user-agent"] == USER_AGENT


@pytest.mark.parametrize("wire", WIRES)
def test_resumed_session_replays_the_same_history(harness, wire):
    agent = harness.start(
        {"replies": [tool_reply(), {"text": "first answer"}, {"text": "second answer"}]},
        wire=wire,
    )
    first = agent.run_turn("one")
    other = harness.agent()
    other.resume(first.session_id)
    assert other.run_turn("two").status == "ok"
    bodies = unmarked(harness.bodies())  # the cache marks move on ($1)
    # The resumed agent sends exactly what the first agent would have sent.
    assert bodies[2]["messages"][: len(bodies[1]["messages"])][:-1] == bodies[1]["messages"][:-1]


@pytest.mark.parametrize("wire", WIRES)
def test_tool_errors_go_back_to_the_model(harness, wire):
    """A4: a refused path, an unknown tool and bad arguments go back to the model as results."""
    agent = harness.start(
        {
            "replies": [
                tool_reply(name="read_file", arguments={"path": "/etc/passwd"}),
                tool_reply("c2", name="no_such_tool", arguments={}),
                tool_reply("c3", name="read_file", arguments="{not json"),
                {"text": "handled"},
            ]
        },
        wire=wire,
    )
    result = agent.run_turn("read it")
    assert result.status == "ok"
    outputs = [r["content"] for r in harness.rows(result.session_id) if r["role"] == "tool"]
    assert "outside the workspace" in outputs[0]
    assert "no_such_tool" in outputs[1]
    assert "Invalid arguments" in outputs[2]


def test_the_user_message_is_on_disk_before_the_model_is_called(harness, monkeypatch):
    """S8: a crash during the model call cannot lose what the model was sent."""
    import asyncio
    import threading

    from storage.messages import Messages

    agent = harness.start({"replies": [{"text": "warm"}, {"text": "hi"}]})
    agent.run_turn("warm up")  # the SDK import and the first connection are out of the way
    held, entered = asyncio.Event(), threading.Event()
    seen_before_request = {}
    original = Messages.insert_tx

    async def slow_insert(self, session_id, values):
        entered.set()
        await held.wait()  # the writer is slow (a big database, a busy disk)
        return await original(self, session_id, values)

    monkeypatch.setattr(Messages, "insert_tx", slow_insert)
    worker = threading.Thread(target=agent.run_turn, args=("remember me",))
    worker.start()
    wait_until(entered.is_set, what="the user message reaching the writer")
    # The agent waits for the writer instead of calling the model with unsaved input.
    assert holds_for(lambda: len(harness.server.requests) == 1, seconds=0.5)
    harness.loop.loop.call_soon_threadsafe(held.set)
    wait_until(lambda: len(harness.server.requests) > 1)
    seen_before_request["rows"] = harness.rows(agent.session_id)
    worker.join(10)
    assert "remember me" in [r["content"] for r in seen_before_request["rows"]]
