"""Subagents through the scripted server on both wires, on real SQLite (G1): a `task` call
runs a child agent over requests of its own, its answer is the call's result, it is stopped
with its parent, read-only ones run side by side, it starts no subagents, and its session
is stored as a child of the parent's."""

from __future__ import annotations

import json
import threading

import pytest
from waits import holds_for, wait_until

from agent import events as ev
from agent.kinds import CallPurpose

CHILD = {"system_contains": "You were started by another agent"}
"""The scripted rule that picks a subagent's requests (its system prompt says so)."""
WIRES = ["openai", "anthropic"]


def task_call(prompt: str, call_id: str = "t1", **more) -> dict:
    return {"id": call_id, "name": "task", "arguments": {"prompt": prompt, **more}}


def child_reply(match: dict, **reply) -> dict:
    return {"match": {**CHILD, **match}, **reply}


def non_system(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] not in ("system", "developer")]


def texts(body: dict) -> str:
    return json.dumps(non_system(body))


def tool_names(body: dict, wire: str) -> list[str]:
    if wire == "openai":
        return [t["function"]["name"] for t in body.get("tools", [])]
    return [t["name"] for t in body.get("tools", [])]


def is_child(body: dict) -> bool:
    system = body.get("system") or json.dumps(
        [m for m in body["messages"] if m["role"] in ("system", "developer")]
    )
    return "You were started by another agent" in json.dumps(system)


@pytest.mark.parametrize("wire", WIRES)
def test_g1_a_task_runs_a_subagent_over_its_own_requests_and_its_answer_is_the_result(
    harness, wire
):
    """G1: the subagent's requests carry its own prompt and tools, none of the parent's
    history; its final answer is the task call's result in the parent's next request; its
    tokens count in the parent's totals, apart as well."""
    replies = [
        child_reply(
            {"last_role": "user"},
            tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}}],
        ),
        child_reply({"last_role": "tool"}, text="FOUND: the title is sample"),
        {"tool_calls": [task_call("Read README.md and report its title.", description="title")]},
        {"text": "The README is titled sample."},
    ]
    agent = harness.start({"replies": replies}, wire=wire)
    assert agent.run_turn("SECRET-PARENT-WORDS what is the title?").status == "ok"
    bodies = harness.bodies()
    children = [b for b in bodies if is_child(b)]
    parents = [b for b in bodies if not is_child(b)]
    assert len(children) == 2 and len(parents) == 2
    for body in children:
        assert "SECRET-PARENT-WORDS" not in texts(body)
        assert sorted(tool_names(body, wire)) == ["glob", "grep", "list_dir", "read_file"]
    assert "Read README.md and report its title." in texts(children[0])
    assert "# sample" in texts(children[1])  # its own tool result, in its own context
    assert "task" in tool_names(parents[0], wire)
    last = texts(parents[-1])
    assert "FOUND: the title is sample" in last and "# sample" not in last
    subagent_calls = [
        e for e in harness.events
        if isinstance(e, ev.UsageUpdated) and e.purpose == CallPurpose.SUBAGENT
    ]  # fmt: skip
    assert len(subagent_calls) == 2
    usage = agent.usage
    assert usage.subagent_tokens == sum(e.input_tokens + e.output_tokens for e in subagent_calls)
    assert usage.input_tokens + usage.output_tokens > usage.subagent_tokens > 0
    progress = [e for e in harness.events if isinstance(e, ev.SubagentProgress)]
    assert progress and {e.call_id for e in progress} == {"t1"}
    assert max(e.tool_calls for e in progress) == 1
    assert any(e.tool == "read_file README.md" for e in progress)


def test_g1_the_child_session_is_stored_linked_and_left_out_of_the_list(harness):
    """G1: the subagent's conversation is a session whose parent_session_id names the
    parent; the result's row names it; `list_sessions` shows only the parent; the child's
    calls are stored in the parent session's totals (once)."""
    replies = [
        child_reply({}, text="child answer"),
        {"tool_calls": [task_call("Look around.", description="look around")]},
        {"text": "parent answer"},
    ]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    db = harness.db
    harness.loop.run(db.flush())
    (child,) = harness.loop.run(db.child_sessions(agent.session_id))
    assert child["parent_session_id"] == agent.session_id and child["title"] == "look around"
    assert [r["content"] for r in harness.rows(child["id"])] == ["Look around.", "child answer"]
    listed = harness.loop.run(db.list_sessions())
    assert [s["id"] for s in listed] == [agent.session_id]
    result = next(r for r in harness.rows(agent.session_id) if r["role"] == "tool")
    block = result["display_metadata"]["subagent"]
    assert block["session_id"] == child["id"] and block["status"] == "ok"
    parent_row = harness.loop.run(db.get_session(agent.session_id))
    assert parent_row["api_call_count"] == 3
    assert child["api_call_count"] == 0


@pytest.mark.parametrize("wire", WIRES)
def test_g1_a_stop_mid_subagent_stops_it_with_the_parent(harness, wire):
    """G1: Esc while the subagent's model call is held stops both: the call is cancelled,
    the parent's turn ends stopped, no further request is sent."""
    replies = [
        child_reply({}, text="never seen " * 20, gate="held", gate_after=1),
        {"tool_calls": [task_call("Search for a long time.")]},
        {"text": "must not be asked"},
    ]
    agent = harness.start({"replies": replies}, wire=wire)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(agent.run_turn("go")), daemon=True)
    worker.start()
    wait_until(
        lambda: sum(is_child(b) for b in harness.bodies()) == 1,
        timeout=30,  # a loaded machine: the turn's first call, then the child's
        what=lambda: (
            f"the child's call; requests: {[(b or {}).get('model') for b in harness.bodies()]}"
        ),
    )
    agent.stop()
    worker.join(15)
    assert not worker.is_alive(), "the turn did not end after the stop"
    assert outcome[0].status == "stopped"
    assert len(harness.bodies()) == 2  # the parent's first call and the child's held one
    (finished,) = [e for e in harness.events if isinstance(e, ev.ToolFinished)]
    assert finished.name == "task" and not finished.ok and "stopped" in finished.output


def test_g1_a_stop_before_the_subagent_starts_leaves_no_child_session(harness):
    """G1: a stop that lands once the `task` call is announced, before its subagent began,
    ends the call stopped without a request, and no child session row is created."""
    replies = [
        child_reply({}, text="must not be asked"),
        {"tool_calls": [task_call("Look around.", description="look around")]},
        {"text": "must not be asked either"},
    ]
    agent = harness.start({"replies": replies})

    def stop_at_the_task(event) -> None:
        harness.events.append(event)
        if isinstance(event, ev.ToolStarted) and event.name == "task":
            agent.stop()

    agent.sink = stop_at_the_task
    assert agent.run_turn("go").status == "stopped"
    harness.loop.run(harness.db.flush())
    assert harness.loop.run(harness.db.child_sessions(agent.session_id)) == []
    assert not any(is_child(b) for b in harness.bodies())
    (finished,) = [e for e in harness.events if isinstance(e, ev.ToolFinished)]
    assert finished.name == "task" and not finished.ok and "stopped" in finished.output


@pytest.mark.parametrize("wire", WIRES)
def test_g1_two_read_only_subagents_run_at_once(harness, wire):
    """G1: two `task` calls of one reply are both in flight before either answers (each
    child's call waits at a gate until both requests arrived); results come back in order."""
    replies = [
        child_reply({"last_user_contains": "JOB-A"}, text="answer A", gate="a"),
        child_reply({"last_user_contains": "JOB-B"}, text="answer B", gate="b"),
        {"tool_calls": [task_call("JOB-A", "t1"), task_call("JOB-B", "t2")]},
        {"text": "both done"},
    ]
    agent = harness.start({"replies": replies}, wire=wire)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(agent.run_turn("go")), daemon=True)
    worker.start()
    try:
        wait_until(
            lambda: sum(is_child(b) for b in harness.bodies()) == 2,
            timeout=30,
            what="both subagents' requests in flight at once",
        )
    finally:
        harness.server.open_gate("b")
        harness.server.open_gate("a")
    worker.join(15)
    assert outcome and outcome[0].status == "ok"
    last = non_system(harness.bodies()[-1])
    assert texts({"messages": last}).index("answer A") < texts({"messages": last}).index("answer B")


def test_g1_a_subagent_cannot_start_subagents(harness):
    """G1: a depth of 1: a subagent is offered no `task`, and one it calls anyway is
    refused as an unknown tool."""
    replies = [
        child_reply({"last_role": "user"}, tool_calls=[task_call("deeper", "c1")]),
        child_reply({"last_role": "tool"}, text="could not go deeper"),
        {"tool_calls": [task_call("Go deeper.", agent_type="explore")]},
        {"text": "ok"},
    ]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    children = [b for b in harness.bodies() if is_child(b)]
    assert all("task" not in tool_names(b, "openai") for b in children)
    assert "Unknown tool 'task'" in texts(children[1])
    assert sum(is_child(b) for b in harness.bodies()) == 2


def test_g1_a_custom_agent_type_from_a_file(harness):
    """G1: `.hermes-tui/agents/NAME.md` is a type: listed in the tool's description, its
    body the subagent's system prompt, its `tools` the only tools offered; a file with bad
    front matter is skipped with one sentence."""
    folder = harness.workspace / ".hermes-tui" / "agents"
    folder.mkdir(parents=True)
    (folder / "lister.md").write_text(
        "---\ndescription: Lists folders.\ntools: [list_dir]\n---\nLISTER-PROMPT: list folders.\n"
    )
    (folder / "broken.md").write_text("---\ntools: 3\n---\nbody\n")
    replies = [
        child_reply({"system_contains": "LISTER-PROMPT"}, text="listed"),
        {"tool_calls": [task_call("List the root.", agent_type="lister")]},
        {"text": "ok"},
    ]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    first = harness.bodies()[0]
    (task,) = [t for t in first["tools"] if t["function"]["name"] == "task"]
    assert "- lister: Lists folders. (tools: list_dir)" in task["function"]["description"]
    (child,) = [b for b in harness.bodies() if is_child(b)]
    assert tool_names(child, "openai") == ["list_dir"]
    notices = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert any("broken.md" in n and "`tools` must be a list" in n for n in notices)


def test_g1_an_unknown_agent_type_is_a_sentence_for_the_model(harness):
    """G1: a type that does not exist is refused in one sentence naming the ones there are."""
    replies = [{"tool_calls": [task_call("x", agent_type="nope")]}, {"text": "ok"}]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    assert "there is no agent type 'nope'; there are: explore" in texts(harness.bodies()[-1])


def test_g1_no_agent_type_may_name_task_and_a_child_has_none(harness):
    """G1: depth 1 holds however a subagent is made: a type file naming `task` is skipped,
    and `Agent.child()` with no registry leaves `task` out."""
    folder = harness.workspace / ".hermes-tui" / "agents"
    folder.mkdir(parents=True)
    (folder / "deep.md").write_text("---\ntools: [read_file, task]\n---\nGo deep.\n")
    agent = harness.start({"replies": [{"text": "ok"}]})
    assert agent.run_turn("go").status == "ok"
    notices = [e.text for e in harness.events if isinstance(e, ev.Notice)]
    assert any("deep.md" in n and "a subagent may not use" in n for n in notices)
    assert "task" in agent.registry.names()
    child = agent.child()
    harness.agents.append(child)
    assert "task" not in child.registry.names() and "read_file" in child.registry.names()


def test_g1_resume_and_export_show_the_task_block_and_name_the_child_session(harness):
    """G1: a resumed session's task result keeps the subagent's block (its type, calls,
    tokens, session), the block a resumed transcript draws from it shows them, and the
    Markdown export names the child session that holds the subagent's transcript."""
    from hermes_tui.export import to_json, to_markdown
    from hermes_tui.widgets.tool_block import ToolBlock
    from hermes_tui.widgets.transcript.rows import finish_from_row

    replies = [
        child_reply(
            {"last_role": "user"},
            tool_calls=[{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}],
        ),
        child_reply({"last_role": "tool"}, text="one file: README.md"),
        {"tool_calls": [task_call("List the root.", description="list the root")]},
        {"text": "ok"},
    ]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    harness.loop.run(harness.db.flush())
    (child,) = harness.loop.run(harness.db.child_sessions(agent.session_id))
    rows = harness.rows(agent.session_id)
    result = next(r for r in rows if r["role"] == "tool")
    block = ToolBlock("t1", "task", "task explore: list the root", state="missing")
    finish_from_row(block, result)  # as a resumed transcript draws it
    assert "1 call · " in str(block.header_content()) and "tokens" in str(block.header_content())
    session = harness.loop.run(harness.db.get_session(agent.session_id))
    text = to_markdown(session, rows, summary=lambda name, _args: name, marker=lambda *_: None)
    assert "**Subagent** explore (list the root): 1 tool call, " in text
    assert f"its transcript is session `{child['id']}`" in text
    assert "one file: README.md" in text
    exported = json.loads(to_json(child, harness.rows(child["id"])))
    assert exported["session"]["parent_session_id"] == agent.session_id


def test_g1_a_working_subagent_keeps_its_parent_turn_alive(harness):
    """G1, L1: the subagent's work (its stream, its tool calls) touches the parent's
    activity clock while the parent waits in its tool batch, so no stall is shown."""
    listing = [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}]
    replies = [
        child_reply({"last_role": "user"}, tool_calls=listing, gate="first"),
        child_reply({"last_role": "tool"}, text="listed", gate="second"),
        {"tool_calls": [task_call("List the root.")]},
        {"text": "ok"},
    ]
    agent = harness.start({"replies": replies})
    worker = threading.Thread(target=lambda: agent.run_turn("go"), daemon=True)
    worker.start()
    try:
        wait_until(lambda: sum(is_child(b) for b in harness.bodies()) == 1, what="child call")
        before = agent.activity.last
        harness.server.open_gate("first")
        wait_until(lambda: sum(is_child(b) for b in harness.bodies()) == 2, what="its 2nd call")
        assert agent.activity.last > before
    finally:
        harness.server.open_gate("first")
        harness.server.open_gate("second")
        worker.join(15)
    assert not worker.is_alive()


def test_g1_subagents_that_may_write_run_one_at_a_time(harness):
    """G1: two `task` calls of a type with a writing tool do not overlap: the second
    subagent's first request waits until the first subagent has answered."""
    folder = harness.workspace / ".hermes-tui" / "agents"
    folder.mkdir(parents=True)
    (folder / "writer.md").write_text("---\ntools: [read_file, write_file]\n---\nWrite.\n")
    replies = [
        child_reply({"last_user_contains": "JOB-A"}, text="wrote A", gate="a"),
        child_reply({"last_user_contains": "JOB-B"}, text="wrote B"),
        {
            "tool_calls": [
                task_call("JOB-A", "t1", agent_type="writer"),
                task_call("JOB-B", "t2", agent_type="writer"),
            ]
        },
        {"text": "both done"},
    ]
    agent = harness.start({"replies": replies})
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(agent.run_turn("go")), daemon=True)
    worker.start()
    try:
        wait_until(
            lambda: sum(is_child(b) for b in harness.bodies()) == 1, timeout=30, what="job A"
        )
        # The time is the subject: for half a second, B must not start while A is held.
        assert holds_for(lambda: sum(is_child(b) for b in harness.bodies()) == 1, 0.5)
    finally:
        harness.server.open_gate("a")
    worker.join(15)
    assert outcome and outcome[0].status == "ok"
    assert sum(is_child(b) for b in harness.bodies()) == 2


def test_g1_an_agent_type_may_run_on_another_model(harness):
    """G1: a type's `model` sends its subagent's requests to that model; the parent's stay."""
    folder = harness.workspace / ".hermes-tui" / "agents"
    folder.mkdir(parents=True)
    (folder / "cheap.md").write_text("---\nmodel: scripted:small-model\n---\nLook.\n")
    replies = [
        child_reply({}, text="looked"),
        {"tool_calls": [task_call("Look.", agent_type="cheap")]},
        {"text": "ok"},
    ]
    agent = harness.start({"replies": replies})
    assert agent.run_turn("go").status == "ok"
    models = [(is_child(b), b["model"]) for b in harness.bodies()]
    assert models == [(False, "test-model"), (True, "small-model"), (False, "test-model")]
