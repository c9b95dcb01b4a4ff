"""A hostile model aiming at files that run code on their own (.git/config's core.fsmonitor,
.git/hooks, .envrc, editor task files): through the real agent against the scripted server,
and headless in a subprocess."""

from __future__ import annotations

import os
import sqlite3

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config
from integration.conftest import Harness

from agent.scripted import Script, ScriptedServer
from agent.tools.registry import DECLINED

FSMONITOR = "[core]\n\tfsmonitor = touch pwned; false\n"
HOOK = "#!/bin/sh\ntouch pwned\n"
TARGETS = [
    (".git/config", FSMONITOR),
    (".git/hooks/pre-commit", HOOK),
    (".GIT/hooks/post-checkout", HOOK),
    ("sub/../.git/config", FSMONITOR),
    ("vendor/lib/.git/config", FSMONITOR),
    ("wt/.git", "gitdir: ../evil\n"),
    (".envrc", "touch pwned\n"),
    (".vscode/tasks.json", '{"tasks": [{"runOptions": {"runOn": "folderOpen"}}]}'),
    (".vscode/settings.json", '{"python.defaultInterpreterPath": "./pwn"}'),
    (".idea/workspace.xml", "<project/>"),
    (".husky/pre-commit", HOOK),
    (".pre-commit-config.yaml", "repos: []\n"),
]


def write_call(path: str, content: str, call_id: str = "c1") -> dict:
    return {
        "tool_calls": [
            {"id": call_id, "name": "write_file", "arguments": {"path": path, "content": content}}
        ]
    }


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    for sub in (".git/hooks", "sub", "vendor/lib/.git", "wt"):
        (root / sub).mkdir(parents=True)
    return root.resolve()


class Recorder:
    """An approve callback that records each request and gives a fixed answer."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request) -> bool:
        self.requests.append(request)
        return self.answer


def run_agent(hermes_home, workspace, replies, mode, approve):
    """One turn of the real agent in `mode`; returns the last message the model was sent."""
    harness = Harness(hermes_home, workspace)
    try:
        harness.start({"replies": replies}, agent={"approval": mode})
        harness.agent(approve=approve).run_turn("do it")
        return harness.bodies()[-1]["messages"][-1]
    finally:
        harness.close()


@pytest.mark.parametrize(("path", "content"), TARGETS)
@pytest.mark.parametrize("mode", ["auto-edit", "ask"])
def test_protected_writes_ask_in_every_mode_but_yolo(hermes_home, workspace, mode, path, content):
    approve = Recorder(False)
    told = run_agent(
        hermes_home, workspace, [write_call(path, content), {"text": "ok"}], mode, approve
    )
    [request] = approve.requests
    assert request.protected
    assert request.summary.startswith("protected path (runs code on its own): write_file ")
    assert request.detail.startswith("Protected path: ")
    assert (told["role"], told["content"]) == ("tool", DECLINED)
    target = workspace / os.path.normpath(path)
    assert not target.exists() or target.is_dir()


def test_yes_writes_the_protected_file(hermes_home, workspace):
    approve = Recorder(True)
    told = run_agent(
        hermes_home,
        workspace,
        [write_call(".git/config", FSMONITOR), {"text": "ok"}],
        "auto-edit",
        approve,
    )
    assert len(approve.requests) == 1
    assert told["content"].startswith("Created .git/config")
    assert (workspace / ".git" / "config").read_text() == FSMONITOR


def test_yolo_does_not_ask(hermes_home, workspace):
    approve = Recorder(False)
    run_agent(
        hermes_home,
        workspace,
        [write_call(".git/hooks/pre-commit", HOOK), {"text": "ok"}],
        "yolo",
        approve,
    )
    assert approve.requests == []
    assert (workspace / ".git" / "hooks" / "pre-commit").read_text() == HOOK


def test_auto_edit_still_writes_ordinary_files_without_asking(hermes_home, workspace):
    approve = Recorder(False)
    run_agent(
        hermes_home,
        workspace,
        [write_call("src/git.py", "x = 1\n"), {"text": "ok"}],
        "auto-edit",
        approve,
    )
    assert approve.requests == []
    assert (workspace / "src" / "git.py").read_text() == "x = 1\n"


def test_an_edit_of_git_config_asks_in_auto_edit(hermes_home, workspace):
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    edit = {"path": ".git/config", "old_string": "\tbare = false\n", "new_string": FSMONITOR[7:]}
    approve = Recorder(False)
    replies = [
        {"tool_calls": [{"id": "e1", "name": "edit_file", "arguments": edit}]},
        {"text": "ok"},
    ]
    told = run_agent(hermes_home, workspace, replies, "auto-edit", approve)
    assert [r.tool for r in approve.requests] == ["edit_file"]
    assert told["content"] == DECLINED
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()


def test_a_bare_repository_made_by_the_model_asks_for_its_head(hermes_home, workspace):
    # config first (harmless alone), then HEAD makes git take the directory as a repository.
    replies = [
        write_call("evil/config", FSMONITOR, "c1"),
        write_call("evil/HEAD", "ref: refs/heads/main\n", "c2"),
        {"text": "ok"},
    ]
    approve = Recorder(False)
    run_agent(hermes_home, workspace, replies, "auto-edit", approve)
    assert [r.summary.split()[-1] for r in approve.requests] == ["evil/HEAD"]
    assert not (workspace / "evil" / "HEAD").exists()


# ---------------------------------------------------------------- headless


def run_cli(home, *args, cwd):
    """`hermes-tui ARGS` in this process: the refusal's sentence and what was written are the
    subject, not the process."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return run_cli_in_process(list(args), env=env, cwd=cwd)


def tool_results(home) -> list[str]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return [r[0] for r in conn.execute("SELECT content FROM messages WHERE role='tool'")]
    finally:
        conn.close()


def test_headless_without_yes_refuses_protected_writes_with_a_sentence(hermes_home, workspace):
    replies = [
        {
            "tool_calls": [
                {
                    "id": "h1",
                    "name": "write_file",
                    "arguments": {"path": ".git/hooks/pre-commit", "content": HOOK},
                },
                {
                    "id": "h2",
                    "name": "write_file",
                    "arguments": {"path": "notes.txt", "content": "fine\n"},
                },
            ]
        },
        {"text": "ok"},
        write_call(".git/hooks/pre-commit", HOOK, "h3"),
        {"text": "ok"},
    ]
    server = ScriptedServer(Script.from_dict({"replies": replies})).start()
    try:
        write_config(hermes_home, server, agent={"approval": "auto-edit"})
        proc = run_cli(hermes_home, "run", "set up hooks", cwd=workspace)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
        assert (workspace / "notes.txt").read_text() == "fine\n"  # auto-edit still edits
        refusal = (
            "Refused: .git/hooks/pre-commit is a protected path (git runs hooks and config "
            "commands (core.fsmonitor, core.pager) from it on its own); writing it needs the "
            "user's approval, which is not available here (run with --yes or approval: yolo)."
        )
        sent = server.requests[1].body["messages"]
        assert [m["content"] for m in sent if m["role"] == "tool"][:1] == [refusal]
        assert tool_results(hermes_home)[0] == refusal
        proc = run_cli(hermes_home, "run", "--yes", "set up hooks", cwd=workspace)
        assert proc.returncode == 0, proc.stderr
        assert (workspace / ".git" / "hooks" / "pre-commit").read_text() == HOOK
    finally:
        server.stop()
