"""`hermes-tui run --mode plan` (N1): a real process against the scripted server prints the
plan on stdout, exits 0 and changes no file, even with `--yes`; `--mode` names any mode, a
bad one is one sentence, and yolo needs `--yes`."""

from __future__ import annotations

import os
import subprocess

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config

from agent.scripted import Script

PLAN = "## Plan\n\n1. Create `out.txt`.\n2. Run the tests."


def run(home, workspace, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    # In this process (tests/headless_inprocess.py): what the run says, not the process, is tested.
    return run_cli_in_process(["run", *args], env=env, cwd=workspace)


def script() -> Script:
    calls = [
        {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}},
        {"id": "s1", "name": "run_shell", "arguments": {"command": "touch shell.txt"}},
    ]
    plan = [{"id": "p1", "name": "propose_plan", "arguments": {"plan": PLAN}}]
    return Script.from_dict(
        {"replies": [{"tool_calls": calls}, {"tool_calls": plan}, {"text": "never asked"}]}
    )


@pytest.mark.parametrize("extra", [[], ["--yes"]], ids=["plain", "yes"])
def test_run_mode_plan_prints_the_plan_and_changes_nothing(hermes_home, tmp_path, servers, extra):
    """N1: the plan on stdout, exit 0, no file written (a write refused, the shell read-only
    or refused), and the model is not called after the plan."""
    server = servers.start(script())
    write_config(hermes_home, server, agent={"approval": "ask"})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    proc = run(hermes_home, workspace, "--mode", "plan", *extra, "make out.txt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == PLAN
    assert sorted(p.name for p in workspace.iterdir()) == []
    assert len(server.requests) == 2


def test_run_mode_words(hermes_home, tmp_path, servers):
    """N1: a mode not known, and yolo without --yes, are one-sentence usage errors."""
    server = servers.start(Script.from_dict({"replies": [{"text": "hi"}]}))
    write_config(hermes_home, server)
    bad = run(hermes_home, tmp_path, "--mode", "wild", "hi")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "No mode called 'wild'; the modes are ask, auto-edit, plan, yolo." in bad.stderr
    yolo = run(hermes_home, tmp_path, "--mode", "yolo", "hi")
    assert yolo.returncode == 2 and "add --yes to confirm it" in yolo.stderr
    assert "Traceback" not in bad.stderr + yolo.stderr
    ok = run(hermes_home, tmp_path, "--mode", "auto-edit", "hi")
    assert ok.returncode == 0 and ok.stdout.strip() == "hi"
