"""Approvals of MCP tools (M2): asked in ask and auto-edit, trusted by config, remembered for
the session ("always") or for the project (stored in the user's home)."""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from mcp_harness import call
from mcp_servers import stdio_entry

from agent.tools.approvals import Verdict

TWO_CALLS = {
    "replies": [
        {
            "tool_calls": [
                {"id": "e1", "name": "mcp__s__echo", "arguments": {"text": "one"}},
                {"id": "a1", "name": "mcp__s__add", "arguments": {"a": 1, "b": 2}},
            ]
        },
        {"text": "done"},
    ],
    "loop": True,
}


class Approver:
    """Answers every question with `verdict` and keeps the questions."""

    def __init__(self, verdict=Verdict(True)):
        self.verdict = verdict
        self.asked = []

    def __call__(self, request):
        self.asked.append(request)
        return self.verdict

    @property
    def tools(self):
        return [r.tool for r in self.asked]


@pytest.mark.parametrize("mode", ["ask", "auto-edit"])
def test_mcp_tools_ask_in_ask_and_auto_edit(mcp, mode):
    """M2: an MCP tool can do anything, so ask and auto-edit both ask; the dialog is told the
    server and its read-only claim, and offers "always for this project"."""
    approver = Approver()
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": mode}, approve=approver
    )
    result = agent.run_turn("go")
    assert result.status == "ok", result.error
    assert approver.tools == ["mcp__s__echo", "mcp__s__add"]
    echo = approver.asked[0]
    assert "MCP server s" in echo.note and "read-only" in echo.note
    assert "not checked" in echo.note
    assert "read-only" not in approver.asked[1].note
    assert echo.project and echo.always.server == "s" and echo.always.tool == "echo"
    assert '"text": "one"' in echo.detail


def test_yolo_never_asks(mcp):
    """M2: yolo runs MCP tools without asking, like every tool."""
    approver = Approver()
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": "yolo"}, approve=approver
    )
    assert agent.run_turn("go").status == "ok"
    assert approver.asked == []


def test_a_declined_call_is_not_run(mcp):
    """M2: a no is a declined result for the model; the tool is not called."""
    approver = Approver(Verdict(False, reason="not now"))
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": "ask"}, approve=approver
    )
    result = agent.run_turn("go")
    rows = mcp.tool_rows(result.session_id)
    assert [r["display_metadata"]["outcome"] for r in rows] == ["declined", "declined"]
    assert "not now" in rows[0]["content"]


@pytest.mark.parametrize(
    ("trust", "asked"),
    [(["echo"], ["mcp__s__add"]), ("all", []), ([], ["mcp__s__echo", "mcp__s__add"])],
)
def test_tools_trusted_in_config_do_not_ask(mcp, trust, asked):
    """M2: `trust: [tool, ...]` and `trust: all` in config.yaml let those tools run unasked."""
    approver = Approver()
    agent = mcp.start(
        TWO_CALLS,
        {"s": stdio_entry("normal", trust=trust)},
        agent={"approval": "ask"},
        approve=approver,
    )
    assert agent.run_turn("go").status == "ok"
    assert approver.tools == asked


def test_always_remembers_the_server_and_tool_for_the_session(mcp):
    """M2: "always" covers that tool of that server, with any arguments, for the session;
    another tool still asks, and a new session asks again."""
    approver = Approver(Verdict(True, always=True))
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": "ask"}, approve=approver
    )
    agent.run_turn("go")
    assert approver.tools == ["mcp__s__echo", "mcp__s__add"]
    agent.run_turn("again, with other arguments")
    assert approver.tools == ["mcp__s__echo", "mcp__s__add"]
    agent.new_session()
    agent.run_turn("a new session")
    assert len(approver.asked) == 4


def test_always_for_this_project_is_stored_and_never_asks_again(mcp, hermes_home):
    """M2: "always for this project" is written to $HERMES_TUI_HOME/projects.yaml (0600,
    atomically); a new session and a new run in this workspace do not ask for that tool."""
    approver = Approver(Verdict(True, always=True, project=True))
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": "ask"}, approve=approver
    )
    agent.run_turn("go")
    assert len(approver.asked) == 2
    path = hermes_home / "projects.yaml"
    stored = yaml.safe_load(path.read_text())
    assert stored[str(mcp.h.workspace.resolve())]["mcp_trust"] == {"s": ["echo", "add"]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    later = Approver()
    other = mcp.agent(approve=later)
    other.run_turn("a later run")
    assert later.asked == []


def test_a_project_approval_holds_only_in_its_own_workspace(mcp, tmp_path):
    """M2: the project approval is keyed by the workspace: another folder asks."""
    approver = Approver(Verdict(True, always=True, project=True))
    agent = mcp.start(
        TWO_CALLS, {"s": stdio_entry("normal")}, agent={"approval": "ask"}, approve=approver
    )
    agent.run_turn("go")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mcp.h.workspace = elsewhere
    later = Approver()
    mcp.agent(approve=later).run_turn("in another project")
    assert later.tools == ["mcp__s__echo", "mcp__s__add"]


def test_without_an_approver_an_mcp_call_is_refused(mcp):
    """M2: headless without --yes in ask mode refuses the call and tells the model why."""
    agent = mcp.start(
        {"replies": [call("mcp__s__echo", {"text": "x"}), {"text": "ok"}]},
        {"s": stdio_entry("normal")},
        agent={"approval": "ask"},
    )
    result = agent.run_turn("go")
    assert "approval" in mcp.tool_rows(result.session_id)[0]["content"]
