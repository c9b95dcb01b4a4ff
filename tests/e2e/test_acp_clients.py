"""E1 end to end with ACP clients nobody here wrote: acpx (npm's headless ACP client) drives
`hermes-tui acp` through a prompt with a tool call, then a prompt it cancels; Toad (PyPI's
`batrachian-toad`, which needs Python 3.14) opens it in tmux where a 3.14 is found.

Each skips, saying why, where its client is not installed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from helpers import write_config
from waits import wait_until

from agent.scripted import Script

pytestmark = pytest.mark.e2e
BOUND = 120.0

SCRIPT = {
    "replies": [
        {"match": {"last_role": "tool"}, "text": "Done: notes.txt written."},
        {
            "match": {"last_user_contains": "make the file"},
            "text": "Writing it.",
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "write_file",
                    "arguments": {"path": "notes.txt", "content": "hi\n"},
                }
            ],
        },
        {
            "match": {"last_user_contains": "stop me"},
            "text": "An answer the client cancels part way through.",
            "chunk_size": 4,
            "gate": "never",
            "gate_after": 2,
        },
    ]
}


def _agent_command() -> str:
    return f"{sys.executable} -m hermes_tui acp"


def _env(home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


def test_acpx_drives_a_tool_call_and_a_cancel(hermes_home, tmp_path, servers):
    """E1: a client from npm: `acpx exec` runs a prompt whose tool call writes a file (the
    client approving it), then `acpx cancel` stops a prompt mid-stream."""
    acpx = shutil.which("acpx")
    if acpx is None:
        pytest.skip("acpx (npm) is not installed: `npm install -g acpx` runs this test")
    server = servers.start(Script.from_dict(SCRIPT))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_config(hermes_home, server, agent={"approval": "ask"}, sandbox="off")
    env = _env(hermes_home)
    base = [acpx, "--agent", _agent_command(), "--cwd", str(workspace), "--approve-all"]
    done = subprocess.run(
        [*base, "--format", "json", "exec", "make the file"],
        capture_output=True, text=True, env=env, timeout=BOUND, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (workspace / "notes.txt").read_text() == "hi\n"
    updates = _updates(done.stdout)
    assert "tool_call" in {u["sessionUpdate"] for u in updates}
    assert "Done: notes.txt written." in _answer(updates)

    # A prompt left running in acpx's session (its queue owner keeps the agent), then cancel.
    subprocess.run(
        [*base, "sessions", "new"], env=env, timeout=BOUND, check=True, capture_output=True
    )
    try:
        running = subprocess.Popen(
            [*base, "--format", "json", "prompt", "stop me"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until(lambda: len(server.requests) >= 3, timeout=BOUND, what="the prompt streaming")
        cancel = subprocess.run(
            [*base, "cancel"], env=env, timeout=BOUND, check=False, capture_output=True, text=True
        )
        assert cancel.returncode == 0, cancel.stderr[-2000:]
        out, _ = running.communicate(timeout=BOUND)
        assert '"stopReason":"cancelled"' in out.replace(" ", "")
    finally:
        subprocess.run(
            [*base, "sessions", "close"], env=env, timeout=BOUND, check=False, capture_output=True
        )
    db = sqlite3.connect(hermes_home / "state.db")
    kinds = {row[0] for row in db.execute("SELECT display_kind FROM messages")}
    assert "turn_stopped" in kinds


def _updates(stdout: str) -> list[dict]:
    """The session/update payloads in acpx's JSON-RPC log."""
    found = []
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("method") == "session/update":
            found.append(message["params"]["update"])
    return found


def _answer(updates: list[dict]) -> str:
    return "".join(
        u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def test_toad_drives_a_tool_call_and_a_cancel_in_tmux(
    model_server, workspace, tmp_path, hermes_home
):
    """E1: Toad, the Textual ACP front end, starts `hermes-tui acp` in a private tmux server:
    a prompt whose tool call writes a file shows its answer; Escape cancels a prompt
    mid-stream, and the stored session shows the stopped turn."""
    if shutil.which("python3.14") is None:
        pytest.skip("Toad (batrachian-toad) needs Python 3.14, and no python3.14 is on PATH")
    toad = shutil.which("toad")
    if toad is None or shutil.which("tmux") is None:
        pytest.skip("Toad needs tmux and `toad` (`uv tool install batrachian-toad --python 3.14`)")
    from e2e.terminal import SIZE, Terminal, app_env

    model_server(SCRIPT, approval="yolo")
    term = Terminal(tmp_path, app_env(hermes_home, tmp_path))
    env = [arg for name, value in term.env.items() for arg in ("-e", f"{name}={value}")]
    columns, lines = SIZE
    try:
        toad_command = [toad, "acp", _agent_command(), str(workspace)]
        term.tmux("new-session", "-d", "-s", term.TARGET, "-x", str(columns), "-y", str(lines),
                  "-c", str(workspace), *env, *toad_command)  # fmt: skip
        term.wait_for("hermes-tui", timeout=BOUND)
        term.send("make the file", "Enter")
        term.wait_for("Done: notes.txt written.", timeout=BOUND)
        assert (workspace / "notes.txt").read_text() == "hi\n"
        term.send("stop me", "Enter")
        term.wait_for("An answer", timeout=BOUND)
        term.send("Escape")
        db = hermes_home / "state.db"
        wait_until(
            lambda: "turn_stopped" in {r[0] for r in sqlite3.connect(db).execute(
                "SELECT display_kind FROM messages")},
            timeout=BOUND, what="the stopped turn stored",
        )  # fmt: skip
    finally:
        term.kill()
