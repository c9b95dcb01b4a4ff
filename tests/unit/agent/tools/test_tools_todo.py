"""todo_write's checks (N2): one item in progress, the list and its items bounded, the
statuses named, and a stored list that does not read as one never breaks a resume."""

from __future__ import annotations

import pytest

from agent.todos import MAX_ITEMS, MAX_TEXT, TodoList


def item(text="step", status="pending"):
    return {"text": text, "status": status}


def run(reg, yolo, todos):
    return reg.run("todo_write", {"todos": todos}, yolo)


def test_n2_a_good_list_is_kept_and_read_back(reg, yolo):
    """N2: the agent's keeper gets the list; the model reads it back numbered."""
    kept = []
    yolo.keep_todos = kept.append
    result = run(reg, yolo, [item("a", "done"), item("b  \n c", "in_progress"), item("d")])
    assert result.ok and result.display == {
        "todos": [item("a", "done"), item("b c", "in_progress"), item("d")]
    }
    assert "2. [in_progress] b c" in result.output
    assert [k.progress for k in kept] == ["1/3"]


@pytest.mark.parametrize(
    ("todos", "says"),
    [
        ([item(status="in_progress"), item(status="in_progress")], "at most one item"),
        ([item()] * (MAX_ITEMS + 1), f"at most {MAX_ITEMS} are allowed"),
        ([item("x" * (MAX_TEXT + 1))], f"keep each item under {MAX_TEXT}"),
        ([item(status="blocked")], "use one of pending, in_progress, done"),
        ([item(text="  ")], "needs a non-empty text"),
        (["just a string"], "must be an object"),
        ("not a list", "must be an array"),
    ],
)
def test_n2_a_bad_list_is_refused_with_a_sentence_and_not_kept(reg, yolo, todos, says):
    """N2: each refusal is one sentence for the model; nothing reaches the keeper."""
    kept = []
    yolo.keep_todos = kept.append
    result = run(reg, yolo, todos)
    assert not result.ok and says in result.output, result.output
    assert result.output.startswith("todo_write refused the list:") or "must be" in result.output
    assert "\n" not in result.output and "Traceback" not in result.output
    assert kept == []


def test_n2_statuses_other_agents_use_are_understood(reg, yolo):
    """`completed` and `in progress` (other agents' words) mean done and in_progress."""
    result = run(reg, yolo, [item(status="completed"), item(status="In Progress")])
    assert result.ok and [i["status"] for i in result.display["todos"]] == ["done", "in_progress"]


def test_n2_a_stored_list_that_does_not_read_keeps_what_does():
    """A hostile or damaged metadata value never breaks a resume: bad items are left out."""
    stored = [item("ok"), {"text": 3}, "junk", item("x" * 5000), item("fine", "done")]
    assert TodoList.stored(stored).to_json() == [item("ok"), item("fine", "done")]
    assert TodoList.stored({"not": "a list"}).items == ()
    assert TodoList.stored(None).items == ()


def test_n2_the_call_reads_as_its_progress_in_the_transcript(reg):
    """The tool row says how far the list is, not the list's JSON; junk never raises."""
    todos = [item("a", "done"), item("b", "in_progress"), item("c")]
    assert reg.summary("todo_write", {"todos": todos}) == "todo_write 1/3 done ▶ b"
    assert reg.summary("todo_write", {"todos": "junk"}) == "todo_write 0/0 done"


def test_n2_plan_mode_keeps_a_list_too(reg, ws):
    """N1, N2: planning is when a list helps most; it changes no file, so plan allows it."""
    from agent.tools import ToolContext

    plan = ToolContext(ws, approval_mode="plan")
    result = run(reg, plan, [item("read", "in_progress")])
    assert result.ok and not reg.needs_approval("todo_write", "ask")
