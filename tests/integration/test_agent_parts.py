"""The Agent's parts as a second front end or a subagent will use them (A1, D3, T3).

A second agent for the same world is one line (`Agent.child`); it has its own session and
context over the same store, config and workspace. The named probes let a test act at one
moment of a turn. The store is reached only through the writer (an architecture test
checks the code; these check the behaviour).
"""

from __future__ import annotations

from agent.probes import AgentProbes
from agent.tools.registry import ToolRegistry, default_registry


def test_a_child_agent_is_one_line_and_keeps_its_own_session(harness):
    """A1, D3: a child runs its own turn over the same store; the parent's session is untouched."""
    parent = harness.start({"replies": [{"text": "parent answer"}, {"text": "child answer"}]})
    assert parent.run_turn("parent task").status == "ok"
    child = parent.child(registry=ToolRegistry([default_registry().get("read_file")]))
    harness.agents.append(child)
    result = child.run_turn("child task")
    assert result.status == "ok" and result.text == "child answer"
    assert child.session_id and child.session_id != parent.session_id
    assert child.store is parent.store and child.workspace == parent.workspace
    assert [t["function"]["name"] for t in harness.bodies()[1]["tools"]] == ["read_file"]
    parent_texts = [m.content for m in parent.messages]
    assert parent_texts == ["parent task", "parent answer"]
    assert [r["content"] for r in harness.rows(child.session_id)] == ["child task", "child answer"]
    # The child's request carries only its own conversation.
    assert [m["content"] for m in harness.bodies()[1]["messages"] if m["role"] != "system"] == [
        "child task"
    ]


def test_a_child_may_run_on_another_model(harness):
    """A1: `child(model=...)` sends the child's requests to that model, the parent's stay."""
    parent = harness.start({"replies": [{"text": "a"}, {"text": "b"}]})
    provider = parent.provider_name
    child = parent.child(model=f"{provider}:other-model")
    harness.agents.append(child)
    child.run_turn("x")
    parent.run_turn("y")
    assert [b["model"] for b in harness.bodies()] == ["other-model", parent.model_name]


def test_the_probes_run_at_their_moments_in_order(harness):
    """T3: each probe runs once at its moment: the call, the tools, the seal."""
    call = {"id": "c1", "name": "list_dir", "arguments": {"path": "."}}
    agent = harness.start({"replies": [{"tool_calls": [call]}, {"text": "done"}]})
    seen: list[str] = []
    agent.probes = AgentProbes(
        before_model_call=lambda: seen.append("call"),
        after_tool_batch=lambda: seen.append("tools"),
        before_seal=lambda: seen.append("seal"),
    )
    assert agent.run_turn("list").status == "ok"
    assert seen == ["call", "tools", "call", "seal"]


def test_new_and_attached_sessions_reset_the_same_fields(harness):
    """D3: a new session and an attached one start from the same reset (one type, one path)."""
    agent = harness.start({"replies": [{"text": "one"}]})
    agent.run_turn("first")
    stored = agent.session_id
    agent.state.metadata["x"] = 1
    agent.new_session()
    assert agent.session_id is None and agent.messages == [] and agent.state.metadata == {}
    assert agent.usage.input_tokens == 0
    session = harness.loop.run(harness.db.get_session(stored))
    agent.attach_session(stored, harness.rows(stored), session)
    assert agent.session_id == stored
    assert [m.content for m in agent.messages] == ["first", "one"]
    assert agent.usage.input_tokens == session["input_tokens"]
