"""Checkpoints over real turns: taken before a turn's first change (file tool or shell),
linked to its user message, restored by /undo and /rewind, outside edits kept (X2)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from agent.checkpoints import session as changes
from agent.checkpoints.shadow import git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


def write(path: str, content: str, call_id: str) -> dict:
    arguments = {"path": path, "content": content}
    return {"tool_calls": [{"id": call_id, "name": "write_file", "arguments": arguments}]}


def shell(command: str, call_id: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]}


def rows_of(harness, agent) -> list[dict]:
    agent.checkpointer.idle()
    return harness.loop.run(harness.db.list_checkpoints(agent.session_id))


def undo(harness, agent, *, overwrite: bool = False):
    rows = rows_of(harness, agent)
    step = changes.undo_step(agent.checkpointer, rows)
    assert step is not None
    plan = step.plan
    result = changes.apply(
        agent.checkpointer,
        step.rewind,
        plan,
        overwrite=overwrite,
        record=lambda row: harness.db.enqueue_checkpoint(agent.session_id, row),
        mark_undone=lambda key: harness.db.enqueue_checkpoint_update(
            agent.session_id, key, undone=True
        ),
    )
    agent.checkpointer.idle()
    return plan, result


def test_a_turn_is_checkpointed_before_its_first_change_and_undone(harness):
    ws = harness.workspace
    agent = harness.start(
        {
            "replies": [
                write("a.txt", "one\n", "w1"),
                write("README.md", "# changed\n", "w2"),
                {"text": "Wrote them."},
            ]
        }
    )
    result = agent.run_turn("write two files")
    assert result.status == "ok"
    assert (ws / "a.txt").read_text() == "one\n"
    [row] = rows_of(harness, agent)
    user = next(r for r in harness.rows(agent.session_id) if r["role"] == "user")
    assert row["message_id"] == user["id"]
    assert row["after_ref"] and sorted(row["paths"]) == ["README.md", "a.txt"]
    _plan, outcome = undo(harness, agent)
    assert sorted(outcome.restored) == ["README.md", "a.txt"] and not outcome.kept
    assert not (ws / "a.txt").exists()
    assert (ws / "README.md").read_text() == "# sample\n"
    assert changes.undo_step(agent.checkpointer, rows_of(harness, agent)) is None


def test_shell_turns_are_checkpointed_before_the_command(harness):
    ws = harness.workspace
    agent = harness.start(
        {"replies": [shell("echo made > made.txt && rm README.md", "s1"), {"text": "ok"}]}
    )
    agent.run_turn("shell it")
    assert (ws / "made.txt").exists() and not (ws / "README.md").exists()
    [row] = rows_of(harness, agent)
    assert row["shell"]
    undo(harness, agent)
    assert not (ws / "made.txt").exists()
    assert (ws / "README.md").read_text() == "# sample\n"


def test_a_turn_without_changes_records_no_checkpoint(harness):
    agent = harness.start({"replies": [{"text": "Just talking."}]})
    agent.run_turn("hello")
    assert rows_of(harness, agent) == []


def test_an_outside_edit_is_reported_and_kept_unless_confirmed(harness):
    ws = harness.workspace
    agent = harness.start({"replies": [write("README.md", "# agent\n", "w1"), {"text": "ok"}]})
    agent.run_turn("edit the readme")
    (ws / "README.md").write_text("# user edit\n")  # outside the agent, after its turn
    plan, outcome = undo(harness, agent)
    assert [c.path for c in plan.conflicts] == ["README.md"]
    assert outcome.kept == ["README.md"] and not outcome.restored
    assert (ws / "README.md").read_text() == "# user edit\n"


def test_a_confirmed_conflict_is_overwritten(harness):
    ws = harness.workspace
    agent = harness.start({"replies": [write("README.md", "# agent\n", "w1"), {"text": "ok"}]})
    agent.run_turn("edit the readme")
    (ws / "README.md").write_text("# user edit\n")
    _plan, outcome = undo(harness, agent, overwrite=True)
    assert outcome.restored == ["README.md"]
    assert (ws / "README.md").read_text() == "# sample\n"


def test_rewind_to_an_earlier_message_restores_every_later_turn(harness):
    ws = harness.workspace
    agent = harness.start(
        {
            "replies": [
                write("one.txt", "1\n", "w1"),
                {"text": "first"},
                write("two.txt", "2\n", "w2"),
                {"text": "second"},
            ]
        }
    )
    agent.run_turn("first")
    agent.run_turn("second")
    rows = rows_of(harness, agent)
    users = [r for r in harness.rows(agent.session_id) if r["role"] == "user"]
    rewind = changes.rewind_to_message(rows, users[0]["id"])
    plan = changes.plan(agent.checkpointer, rewind)
    assert sorted(c.path for c in plan.restore) == ["one.txt", "two.txt"]
    later = changes.rewind_to_message(rows, users[1]["id"])
    assert [c.path for c in changes.plan(agent.checkpointer, later).restore] == ["two.txt"]
    assert (ws / "one.txt").exists()


def test_a_workspace_that_is_not_a_git_repository_works_the_same(harness):
    ws = harness.workspace
    assert not (ws / ".git").exists()
    agent = harness.start({"replies": [write("x.txt", "x\n", "w1"), {"text": "ok"}]})
    agent.run_turn("x")
    undo(harness, agent)
    assert not (ws / "x.txt").exists()


def _hash_tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_users_git_is_never_touched(harness):
    ws = harness.workspace
    run = {"cwd": ws, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "add", "."], **run)
    subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "one"], **run
    )
    (ws / "README.md").write_text("# staged\n")
    subprocess.run(["git", "add", "README.md"], **run)
    (ws / "wip.txt").write_text("stash me\n")
    subprocess.run(["git", "stash", "-u", "-q"], **run)
    (ws / ".gitignore").write_text("ignored.log\n")
    (ws / "ignored.log").write_text("noise\n")
    before = _hash_tree(ws / ".git")
    agent = harness.start(
        {"replies": [write("new.txt", "n\n", "w1"), shell("echo s > s.txt", "s1"), {"text": "k"}]}
    )
    agent.run_turn("change things")
    plan, _outcome = undo(harness, agent)
    assert _hash_tree(ws / ".git") == before
    assert "ignored.log" not in {c.path for c in plan.restore + plan.conflicts}
    assert (ws / "ignored.log").read_text() == "noise\n"
    assert not (ws / "new.txt").exists() and not (ws / "s.txt").exists()


def test_a_file_over_the_cap_is_left_out_and_said_once(harness):
    ws = harness.workspace
    (ws / "big.bin").write_bytes(b"x" * 2048)
    agent = harness.start(
        {
            "replies": [
                write("a.txt", "a\n", "w1"),
                {"text": "one"},
                write("b.txt", "b\n", "w2"),
                {"text": "two"},
            ]
        },
        checkpoints={"max_file_mb": 0.001},
    )
    agent.run_turn("one")
    agent.run_turn("two")
    agent.checkpointer.idle()
    notices = [e.text for e in harness.events if type(e).__name__ == "Notice"]
    assert [n for n in notices if "big.bin" in n] == [notices[0]]
    assert (
        notices[0] == "Not checkpointed (over 1 KB): big.bin; /undo and /rewind leave it as it is."
    )


def test_without_git_the_user_is_told_once_there_are_no_checkpoints(tmp_path, monkeypatch):
    from agent import events as ev
    from agent import gitsafe
    from agent.config import load_config
    from agent.confinement import NO_GIT
    from agent.loop import Agent

    monkeypatch.setattr(gitsafe.shutil, "which", lambda _name: None)
    (tmp_path / "home").mkdir()
    seen: list = []
    agent = Agent(load_config(tmp_path / "home", demo=True), sink=seen.append, workspace=tmp_path)
    try:
        assert agent.checkpointer is None
        assert [e.text for e in seen if isinstance(e, ev.Notice)] == [NO_GIT]
    finally:
        agent.close()
