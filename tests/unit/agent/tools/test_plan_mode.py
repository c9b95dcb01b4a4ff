"""Plan mode at the tools (N1): no file changes, shell read-only under the real sandbox, and
every unconfined shell command asked, never covered by an "always"."""

from __future__ import annotations

import pytest

from agent.kinds import SandboxMode
from agent.modes import PLAN_NO_CHANGES
from agent.tools import ToolContext
from agent.tools.approvals import ApprovalMemory, Verdict, always_scope
from agent.tools.registry import PLAN_UNCONFINED_NOTE
from agent.tools.sandbox import Probe, Sandbox, probe

REAL = probe()
needs_bwrap = pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")


class Asker:
    """An approval callback that records each request and answers `answer`."""

    def __init__(self, answer: bool = True) -> None:
        self.asked: list = []
        self.answer = answer

    def __call__(self, request):
        self.asked.append(request)
        return Verdict(self.answer)


def plan(ws, sandbox=None, **kw) -> ToolContext:
    return ToolContext(ws, approval_mode="plan", sandbox=sandbox, **kw)


def test_file_tools_are_refused_with_a_sentence_and_change_nothing(reg, ws):
    """N1: write_file and edit_file in plan mode never run nor ask; the model reads why."""
    (ws / "a.txt").write_text("old\n")
    asker = Asker()
    ctx = plan(ws, approve=asker)
    wrote = reg.run("write_file", {"path": "b.txt", "content": "new\n"}, ctx)
    edited = reg.run("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}, ctx)
    for result in (wrote, edited):
        assert not result.ok and result.output == PLAN_NO_CHANGES
    assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "old\n"
    assert asker.asked == []
    # Reading still works.
    assert reg.run("read_file", {"path": "a.txt"}, ctx).ok


@needs_bwrap
def test_shell_runs_unasked_with_the_workspace_read_only(reg, ws):
    """N1: under bubblewrap, plan-mode shell reads the workspace, cannot write it, and says so."""
    (ws / "a.txt").write_text("seen\n")
    asker = Asker()
    ctx = plan(ws, Sandbox(SandboxMode.AUTO, False, REAL), approve=asker)
    read = reg.run("run_shell", {"command": "cat a.txt"}, ctx)
    assert read.ok and "seen" in read.output
    wrote = reg.run("run_shell", {"command": "echo x > b.txt; echo y >> a.txt"}, ctx)
    assert not wrote.ok and "Read-only file system" in wrote.output
    assert "plan mode: the command ran with the workspace read-only" in wrote.output
    assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "seen\n"
    assert asker.asked == []
    # The same sandbox outside plan mode writes the workspace (what read_only changes).
    auto = ToolContext(
        ws, approval_mode="auto-edit", sandbox=Sandbox(SandboxMode.AUTO, False, REAL)
    )
    assert reg.run("run_shell", {"command": "echo x > b.txt"}, auto).ok


def test_unconfined_shell_asks_every_time_even_when_always_was_given(reg, ws):
    """N1: with no sandbox, each plan-mode shell command asks, says why, offers no
    "always", and an "always" given before in ask mode does not cover it."""
    off = Sandbox(SandboxMode.OFF, False, Probe(False, None, "the sandbox is off"))
    memory = ApprovalMemory()
    memory.remember(always_scope("run_shell", "shell", {"command": "echo hi"}, None))
    asker = Asker(answer=False)
    ctx = plan(ws, off, approve=asker, approvals=memory)
    for _ in range(2):
        result = reg.run("run_shell", {"command": "echo hi"}, ctx)
        assert result.declined
    assert len(asker.asked) == 2
    assert all(r.always is None and r.note == PLAN_UNCONFINED_NOTE for r in asker.asked)
    # In ask mode that "always" answers the same command unasked.
    ask = ToolContext(ws, approval_mode="ask", sandbox=off, approve=asker, approvals=memory)
    assert reg.run("run_shell", {"command": "echo hi"}, ask).ok and len(asker.asked) == 2
