"""S8: kill -9 a headless run while the final answer streams; everything finished survives."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

from helpers import write_config
from waits import wait_until

from agent.recovery import RECOVERY_NOTE
from agent.scripted import Script, ScriptedServer


def _env(home):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


def test_sigkill_while_the_final_answer_streams_then_resume(hermes_home, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# sample\n")
    calls = [
        {"id": "c1", "name": "list_dir", "arguments": {"path": "."}},
        {"id": "c2", "name": "read_file", "arguments": {"path": "README.md"}},
    ]
    script = {
        "replies": [
            {"text": "Looking.", "tool_calls": calls},
            # Held mid-stream: a few chunks are out, the answer never finishes.
            {"text": "The final answer " * 10, "chunk_size": 4, "gate": "hold", "gate_after": 3},
            {"text": "Recovered and finished."},
        ]
    }
    server = ScriptedServer(Script.from_dict(script)).start()
    try:
        write_config(hermes_home, server, wire="openai")
        child = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui", "run", "inspect the repo"],
            cwd=workspace,
            env=_env(hermes_home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            wait_until(lambda: len(server.requests) >= 2, timeout=30)
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(30) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
            child.stderr.close()

        conn = sqlite3.connect(hermes_home / "state.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            (sid,) = conn.execute("SELECT id FROM sessions").fetchone()
            stored = conn.execute(
                "SELECT role, content, tool_calls, tool_call_id FROM messages"
                " WHERE session_id = ? ORDER BY seq",
                (sid,),
            ).fetchall()
        finally:
            conn.close()
        assert [r[0] for r in stored] == ["user", "assistant", "tool", "tool"]
        assert stored[0][1] == "inspect the repo"
        assert [c["id"] for c in json.loads(stored[1][2])] == ["c1", "c2"]
        assert [r[3] for r in stored[2:]] == ["c1", "c2"]
        assert "# sample" in stored[3][1]

        # Resume: no task, so the interrupted turn continues with a typed recovery note.
        proc = subprocess.run(
            [sys.executable, "-m", "hermes_tui", "run", "--resume", sid],
            cwd=workspace,
            env=_env(hermes_home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "Recovered and finished." in proc.stdout
        sent = server.requests[-1].body["messages"]
        assert sent[-1] == {"role": "user", "content": RECOVERY_NOTE}
        assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "tool", "user"]
        conn = sqlite3.connect(hermes_home / "state.db")
        try:
            tail = conn.execute(
                "SELECT role, display_kind, display_metadata FROM messages"
                " WHERE session_id = ? ORDER BY seq DESC LIMIT 2",
                (sid,),
            ).fetchall()
        finally:
            conn.close()
        assert tail[1] == ("user", None, json.dumps({"note_kind": "recovery"}))
        assert tail[0][0] == "assistant"
    finally:
        server.stop()
