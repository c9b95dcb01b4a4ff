"""E1: protocol errors are protocol errors. A line that is not JSON, a message that is no
JSON-RPC, an unknown method each get their JSON-RPC error and the agent goes on; a client
that disappears mid-turn stops the turn, loses nothing stored, and the process exits.

Raw JSON lines on the pipes of one `hermes-tui acp` process (the SDK's client side would
never send such lines).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading

from helpers import write_config
from waits import wait_until

from agent.scripted import Script

STARTED = 60.0


class RawClient:
    """`hermes-tui acp` with its stdout read line by line as it arrives."""

    def __init__(self, home, workspace) -> None:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["HERMES_TUI_HOME"] = str(home)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui", "acp"],
            cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.lines: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def send(self, raw: str) -> None:
        self.process.stdin.write(raw.encode() + b"\n")
        self.process.stdin.flush()

    def request(self, ident: int, method: str, params: dict) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}))

    def answer(self, ident) -> dict:
        """The response to request `ident` (bounded wait)."""

        def answered():
            return next((m for m in self.lines if m.get("id") == ident and "method" not in m), None)

        return wait_until(answered, timeout=STARTED, what=f"the answer to {ident}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def test_bad_input_gets_errors_and_a_vanished_client_ends_the_turn(hermes_home, tmp_path, servers):
    """E1: -32700 for a line that is not JSON, -32600 for no JSON-RPC, -32601 for an unknown
    method, the process unharmed; then stdin closes mid-turn: the process exits, the turn's
    user message stored."""
    script = {"replies": [{"text": "A long answer that never ends.", "chunk_size": 3,
                           "gate": "never", "gate_after": 2}]}  # fmt: skip
    server = servers.start(Script.from_dict(script))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_config(hermes_home, server, sandbox="off")
    client = RawClient(hermes_home, workspace)
    try:
        client.send("{this is not json")
        parse = wait_until(
            lambda: next((m for m in client.lines if "error" in m), None), timeout=STARTED
        )
        assert parse["error"]["code"] == -32700 and parse["id"] is None
        client.send("[1, 2, 3]")
        client.send(json.dumps({"jsonrpc": "1.0", "id": 7, "method": "initialize"}))
        assert client.answer(7)["error"]["code"] == -32600
        client.request(8, "no/such_method", {})
        assert client.answer(8)["error"]["code"] == -32601
        client.request(1, "initialize", {"protocolVersion": 1})
        assert client.answer(1)["result"]["agentCapabilities"]["loadSession"] is True
        client.request(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = client.answer(2)["result"]["sessionId"]
        client.request(
            3,
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "keep going"}]},
        )
        wait_until(
            lambda: any(m.get("method") == "session/update" for m in client.lines),
            timeout=STARTED, what="the answer streaming",
        )  # fmt: skip
        client.process.stdin.close()  # the editor went away mid-turn
        assert client.process.wait(STARTED) == 0
    finally:
        client.close()
    db = sqlite3.connect(hermes_home / "state.db")
    rows = db.execute("SELECT role, content FROM messages WHERE session_id = ?", (sid,)).fetchall()
    assert ("user", "keep going") in rows
    # The partial answer the client saw is kept too (R2), and the turn is marked stopped.
    kept = [content for role, content in rows if role == "assistant" and content]
    assert kept and "A long answer".startswith(kept[0][:6]), rows
