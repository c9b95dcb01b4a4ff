"""The model's todo list through the scripted server, on real SQLite (N2): the tool's
refusals reach the model, the list is kept with the session, a resume and a compaction keep
it, and `run --json` emits it."""

from __future__ import annotations

import json

import pytest
from helpers import run_headless, write_config

from agent import events as ev
from agent.scripted import Script
from agent.todos import TODOS_KEY

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}
SUMMARY = "SUMMARY: the user asked for a refactor in three steps."
FILL = "lorem ipsum " * 30

PLAN = [
    {"text": "read the parser", "status": "done"},
    {"text": "split the lexer out", "status": "in_progress"},
    {"text": "run the tests", "status": "pending"},
]


def todo_call(todos, call_id: str = "t1") -> dict:
    return {"tool_calls": [{"id": call_id, "name": "todo_write", "arguments": {"todos": todos}}]}


def tool_results(body: dict, wire: str = "openai") -> list[str]:
    if wire == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    results = [b["content"] for b in blocks if b.get("type") == "tool_result"]
    return [r if isinstance(r, str) else "".join(part["text"] for part in r) for r in results]


def test_n2_a_list_with_two_items_in_progress_is_refused_and_the_model_reads_why(harness):
    """N2: at most one item in progress; the refusal is a sentence in the next request."""
    two = [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]
    agent = harness.start({"replies": [todo_call(two), {"text": "fixed"}]})
    assert agent.run_turn("refactor the parser").status == "ok"
    (result,) = tool_results(harness.bodies()[-1])
    assert "at most one item may be in_progress" in result and "Items 1, 2" in result
    assert not agent.state.todos.items  # nothing kept
    assert not [e for e in harness.events if isinstance(e, ev.TodosChanged)]
    rows = harness.rows(agent.session_id)
    assert rows[-2]["display_metadata"]["ok"] is False


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_n2_the_list_is_kept_with_the_session_and_a_resume_shows_it(harness, wire):
    """N2: stored in the session's metadata, announced once, and back on resume."""
    agent = harness.start({"replies": [todo_call(PLAN), {"text": "on it"}]}, wire=wire)
    assert agent.run_turn("refactor the parser").status == "ok"
    (result,) = tool_results(harness.bodies()[-1], wire)
    assert result.startswith("Todo list updated (1/3 done):")
    assert "2. [in_progress] split the lexer out" in result
    (changed,) = [e for e in harness.events if isinstance(e, ev.TodosChanged)]
    assert list(changed.items) == PLAN and (changed.done, changed.total) == (1, 3)
    harness.loop.run(harness.db.flush())
    session = harness.loop.run(harness.db.get_session(agent.session_id))
    assert session["metadata"][TODOS_KEY] == PLAN
    other = harness.agent()
    other.resume(agent.session_id)
    assert other.state.todos.to_json() == PLAN
    kept = other.state.todos
    assert kept.progress == "1/3" and kept.current.text == "split the lexer out"


def test_n2_a_compaction_carries_the_list_word_for_word(harness):
    """N2: after /compact has summarised the todo_write call away, the next request still
    holds the list exactly as written, and so does a resume of the compacted session."""
    replies = [
        {"match": SUMMARY_RULE, "text": SUMMARY},
        todo_call(PLAN),
        *({"text": f"answer {i} {FILL}"} for i in range(6)),
    ]
    comp = {"protect_first": 1, "keep_recent": 4}
    agent = harness.start(
        {"replies": replies}, compression=comp, provider={"context_window": 10_000_000}
    )
    for i in range(4):
        assert agent.run_turn(f"question {i} {FILL}").status == "ok"
    assert agent.compact().ok
    # The tool call itself is in the summarised middle: gone from what the model sees.
    assert not any(m.role == "tool" for m in agent.messages)
    assert agent.run_turn("go on").status == "ok"
    last = json.dumps(harness.bodies()[-1])
    assert SUMMARY in last
    for number, item in enumerate(PLAN, 1):
        assert json.dumps(f"{number}. [{item['status']}] {item['text']}")[1:-1] in last
    resumed = harness.agent()
    resumed.resume(agent.session_id)
    assert resumed.state.todos.to_json() == PLAN
    seen = "\n".join(m.content for m in resumed.messages if not m.is_display)
    assert "2. [in_progress] split the lexer out" in seen


def test_n2_run_json_emits_the_list_when_it_changes(hermes_home, tmp_path, servers):
    """N2: `run --json` has a TodosChanged line each time the model writes its list."""
    later = [{**PLAN[0]}, {**PLAN[1], "status": "done"}, {**PLAN[2], "status": "in_progress"}]
    script = {"replies": [todo_call(PLAN), todo_call(later, "t2"), {"text": "done"}]}
    server = servers.start(Script.from_dict(script))
    write_config(hermes_home, server)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = run_headless(hermes_home, workspace, "--json", "refactor the parser")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    lists = [e for e in events if e["type"] == "TodosChanged"]
    assert [e["items"] for e in lists] == [PLAN, later]
    assert [(e["done"], e["total"]) for e in lists] == [(1, 3), (2, 3)]


def test_n2_the_system_prompt_says_when_to_keep_a_list(harness):
    """N2: the model is told to keep a list for multi-step work and not for a question, and
    the tool is offered in every request."""
    agent = harness.start({"replies": [{"text": "4"}]})
    assert agent.run_turn("what is 2 + 2?").status == "ok"
    (body,) = harness.bodies()
    system = body["messages"][0]["content"]
    assert "three or more steps" in system and "todo_write" in system
    assert "Do not make one for a question" in system
    assert "todo_write" in [tool["function"]["name"] for tool in body["tools"]]
