"""E1: `hermes-tui acp` is a front end without a screen: a run of it imports no Textual (the
import-linter contract in pyproject.toml holds the modules; this holds the command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from waits import wait_until


def test_hermes_tui_acp_never_imports_textual(hermes_home, tmp_path):
    """E1: initialize and session/new over a real `hermes-tui acp`; its import log has no
    textual module in it."""
    (hermes_home / "config.yaml").write_text("model: demo:hermes-demo\n")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new",
         "params": {"cwd": str(tmp_path), "mcpServers": []}},
    ]  # fmt: skip
    env = {**os.environ, "HERMES_TUI_HOME": str(hermes_home)}
    process = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "hermes_tui", "acp", "--demo"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    answers: list[dict] = []
    errors: list[str] = []
    reader = threading.Thread(target=lambda: answers.extend(map(json.loads, process.stdout)))
    # The import log is long: read as it comes, so a full pipe never holds the agent up.
    drain = threading.Thread(target=lambda: errors.extend(process.stderr))
    reader.start()
    drain.start()
    try:
        process.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        process.stdin.flush()
        wait_until(lambda: len(answers) >= 2, timeout=60, what="both answers")
        process.stdin.close()  # the client leaves: the agent exits
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(10)
        drain.join(10)
    assert [a.get("id") for a in answers if "result" in a] == [1, 2], answers
    imported = [line.split("|")[-1].strip() for line in errors if "|" in line]
    assert "hermes_tui.acp.server" in imported
    assert not [name for name in imported if name.split(".")[0] == "textual"]
