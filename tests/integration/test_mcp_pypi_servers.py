"""Third-party MCP servers from PyPI, over stdio, in whole turns (M1).

`mcp-server-time` and `mcp-server-git` are dev dependencies, so `pip install -e '.[dev]'`
(the README's test command, and .ci/run) brings them; where they are missing the tests say
so and skip.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp_harness import call


def module_server(module, *args):
    pytest.importorskip(module, reason=f"{module} is not installed (pip install -e '.[dev]')")
    return {"command": sys.executable, "args": ["-m", module, *args]}


@pytest.fixture
def repository(harness):
    """A git repository with two commits, as the agent's workspace."""
    repo = harness.workspace
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo)}

    def git(*args):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)

    git("init", "-q")
    for message in ("first: the readme", "second: a parser"):
        (repo / "notes.txt").write_text(message)
        git("add", ".")
        git("-c", "user.name=Test", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return repo


def test_a_turn_reads_the_git_log_through_mcp_server_git(mcp, repository):
    """M1: the scripted model calls git_log of mcp-server-git; the commits reach it."""
    server = module_server("mcp_server_git", "--repository", str(repository))
    agent = mcp.start(
        {
            "replies": [
                call("mcp__git__git_log", {"repo_path": str(repository), "max_count": 5}),
                {"text": "Two commits."},
            ]
        },
        {"git": server},
    )
    assert "mcp__git__git_status" in agent.registry.names()
    result = agent.run_turn("what happened in this repository?")
    assert result.status == "ok" and result.text == "Two commits."
    log = mcp.tool_rows(result.session_id)[0]["content"]
    assert "second: a parser" in log and "first: the readme" in log
    assert "second: a parser" in mcp.h.bodies()[1]["messages"][-1]["content"]


def test_mcp_server_time_answers_through_the_agent(mcp):
    """M1: mcp-server-time's get_current_time, with its structured answer."""
    server = module_server("mcp_server_time", "--local-timezone", "UTC")
    agent = mcp.start(
        {"replies": [call("mcp__time__get_current_time", {"timezone": "UTC"}), {"text": "ok"}]},
        {"time": server},
    )
    result = agent.run_turn("what time is it?")
    assert result.status == "ok", result.error
    content = mcp.tool_rows(result.session_id)[0]["content"]
    assert '"timezone": "UTC"' in content and "datetime" in content
