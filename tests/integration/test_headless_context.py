"""Headless runs get the project's context too: instruction files, `@path` attachments and
custom commands (SPEC P1-P3, U6)."""

from __future__ import annotations

import os

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config

from agent.scripted import Script, ScriptedServer


@pytest.fixture
def served(hermes_home, tmp_path):
    servers: list[ScriptedServer] = []

    def start(replies: list[dict]) -> ScriptedServer:
        server = ScriptedServer(Script.from_dict({"replies": replies})).start()
        servers.append(server)
        write_config(hermes_home, server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('from the app')\n")
    (root / "AGENTS.md").write_text("HEADLESS RULE: be brief.\n")
    commands = root / ".hermes-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a file\nmodel: scripted:other-model\n---\n"
        "Explain $1 in one line: @$1\n"
    )
    (commands / "bad.md").write_text("---\nunknown: key\n---\nbody\n")
    return root


def run(home, cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    # In this process (tests/headless_inprocess.py): what the run says, not the process, is tested.
    return run_cli_in_process(["run", *args], env=env, cwd=cwd)


def test_a_mention_is_attached_and_the_instructions_are_in_the_prompt(served, hermes_home, project):
    server = served([{"text": "It prints."}])
    proc = run(hermes_home, project, "look at @src/app.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "It prints."
    body = server.requests[-1].body
    assert "HEADLESS RULE: be brief." in body["messages"][0]["content"]
    user = body["messages"][-1]["content"]
    assert user.startswith("look at @src/app.py") and "print('from the app')" in user


def test_a_custom_command_runs_with_its_arguments_and_model(served, hermes_home, project):
    server = served([{"text": "One line."}])
    proc = run(hermes_home, project, "/explain src/app.py")
    assert proc.returncode == 0, proc.stderr
    body = server.requests[-1].body
    assert body["model"] == "other-model"
    user = body["messages"][-1]["content"]
    assert user.startswith("Explain src/app.py in one line: @src/app.py")
    assert "print('from the app')" in user
    skipped = [line for line in proc.stderr.splitlines() if "bad.md" in line]
    assert len(skipped) == 1 and "unknown front matter key `unknown`" in skipped[0]


def test_an_unknown_or_built_in_command_is_bad_usage_and_a_path_is_text(
    served, hermes_home, project
):
    server = served([{"text": "A path."}])
    unknown = run(hermes_home, project, "/nope now")
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "Unknown command /nope: `run` runs custom commands" in unknown.stderr
    builtin = run(hermes_home, project, "/compact")
    assert builtin.returncode == 2
    assert "/compact is a command of the full-screen app" in builtin.stderr
    assert server.requests == []
    text = run(hermes_home, project, "/usr/bin/env is missing")
    assert text.returncode == 0, text.stderr
    assert server.requests[-1].body["messages"][-1]["content"] == "/usr/bin/env is missing"
