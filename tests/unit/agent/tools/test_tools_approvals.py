"""What "always" covers, the session's memory of it, and a no with a reason (H2)."""

from __future__ import annotations

from agent.tools import ToolContext
from agent.tools.approvals import (
    REASON_MAX_CHARS,
    AlwaysScope,
    ApprovalMemory,
    Verdict,
    always_scope,
)
from agent.tools.registry import DECLINED


class Answers:
    """An approver that gives the queued verdicts in order and records every request."""

    def __init__(self, *verdicts: Verdict | bool) -> None:
        self.verdicts = list(verdicts)
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.verdicts.pop(0)


def test_shell_scope_is_the_exact_command_and_file_scope_the_tool():
    assert always_scope("run_shell", "shell", {"command": "ls"}) == AlwaysScope("run_shell", "ls")
    assert always_scope("write_file", "edit", {"path": "a"}) == AlwaysScope("write_file")
    assert always_scope("read_file", "read", {"path": "a"}) is None
    assert always_scope("run_shell", "shell", {}) is None


def test_memory_covers_only_what_was_remembered():
    memory = ApprovalMemory()
    memory.remember(AlwaysScope("run_shell", "ls"))
    memory.remember(AlwaysScope("write_file"))
    assert memory.covers(AlwaysScope("run_shell", "ls"))
    assert not memory.covers(AlwaysScope("run_shell", "ls; rm -rf ~"))
    assert not memory.covers(AlwaysScope("run_shell", "ls "))
    assert not memory.covers(AlwaysScope("run_shell"))  # never "every shell command"
    assert memory.covers(AlwaysScope("write_file"))
    assert not memory.covers(AlwaysScope("edit_file"))
    assert not memory.covers(None)
    memory.clear()
    assert len(memory) == 0 and not memory.covers(AlwaysScope("write_file"))


def test_the_scope_says_in_words_what_it_covers():
    assert "this exact command" in AlwaysScope("run_shell", "ls").describe()
    assert "any other command still asks" in AlwaysScope("run_shell", "ls").describe()
    assert "every write_file call, to any file" in AlwaysScope("write_file").describe()


def test_always_for_ls_runs_ls_again_unasked_but_asks_for_rm(reg, ws):
    (ws / "x").write_text("keep me\n")
    approve = Answers(Verdict(True, always=True), Verdict(False))
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    assert reg.run("run_shell", {"command": "ls"}, ctx).ok
    assert reg.run("run_shell", {"command": "ls"}, ctx).ok
    result = reg.run("run_shell", {"command": "rm x"}, ctx)
    assert result.declined and result.output == DECLINED
    assert [r.always for r in approve.requests] == [
        AlwaysScope("run_shell", "ls"),
        AlwaysScope("run_shell", "rm x"),
    ]
    assert (ws / "x").exists()


def test_always_for_write_file_does_not_cover_edit_file(reg, ws):
    approve = Answers(Verdict(True, always=True), Verdict(False))
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    assert reg.run("write_file", {"path": "a.txt", "content": "a"}, ctx).ok
    assert reg.run("write_file", {"path": "b.txt", "content": "b"}, ctx).ok
    edit = {"path": "a.txt", "old_string": "a", "new_string": "z"}
    assert reg.run("edit_file", edit, ctx).declined
    assert [r.tool for r in approve.requests] == ["write_file", "edit_file"]
    assert (ws / "a.txt").read_text() == "a"


def test_a_plain_yes_is_not_remembered(reg, ws):
    approve = Answers(True, Verdict(True))
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    assert reg.run("run_shell", {"command": "true"}, ctx).ok
    assert reg.run("run_shell", {"command": "true"}, ctx).ok
    assert len(approve.requests) == 2 and len(ctx.approvals) == 0


def test_the_reason_for_a_no_is_what_the_model_reads(reg, ws):
    approve = Answers(Verdict(False, reason="  use git rm\ninstead  "))
    ctx = ToolContext(ws, approval_mode="ask", approve=approve)
    result = reg.run("run_shell", {"command": "rm x"}, ctx)
    assert result.declined and not result.ok
    assert result.output == f"{DECLINED} Their reason: use git rm instead"


def test_a_long_reason_is_cut(reg, ws):
    ctx = ToolContext(ws, approval_mode="ask", approve=Answers(Verdict(False, reason="x" * 5000)))
    output = reg.run("run_shell", {"command": "rm x"}, ctx).output
    assert output.endswith("x" * REASON_MAX_CHARS) and "x" * (REASON_MAX_CHARS + 1) not in output
