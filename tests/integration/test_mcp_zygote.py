"""The test MCP servers' zygote (tests/mcp_zygote.py) keeps a started server's contract: the
server answers on the launcher's own pipes, in the launcher's environment, ends at the end
of its stdin with the launcher's status, and dies with its launcher."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

from mcp_servers import stdio_entry
from waits import wait_until


def _launched(env: dict[str, str]) -> subprocess.Popen[bytes]:
    entry = stdio_entry("normal")
    assert entry["args"][2].endswith("mcp_zygote.py"), entry  # forked, not started afresh
    return subprocess.Popen(
        [entry["command"], *entry["args"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # as the app starts a server: one kill reaches the group
    )


def _send(process: subprocess.Popen[bytes], message: dict) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    process.stdin.flush()


def _reply(process: subprocess.Popen[bytes]) -> dict:
    assert process.stdout is not None
    return json.loads(process.stdout.readline())


def _initialize(process: subprocess.Popen[bytes]) -> dict:
    _send(
        process,
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "zygote-test", "version": "0"},
            },
        },
    )
    answer = _reply(process)
    _send(process, {"method": "notifications/initialized"})
    return answer


def test_a_forked_server_has_the_launchers_pipes_and_environment_and_its_status():
    env = {"PATH": os.environ.get("PATH", ""), "ZYGOTE_PROBE": "seen"}
    process = _launched(env)
    try:
        assert _initialize(process)["result"]["serverInfo"]["name"] == "test-normal"
        _send(
            process,
            {"id": 2, "method": "tools/call", "params": {"name": "environment", "arguments": {}}},
        )
        names = _reply(process)["result"]["content"][0]["text"].split()
        assert "ZYGOTE_PROBE" in names and "HERMES_TUI_HOME" not in names
        assert process.stdin is not None
        process.stdin.close()  # the end of its stdin ends the server, and so its launcher
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_a_forked_server_dies_with_its_launchers_group():
    process = _launched({"PATH": os.environ.get("PATH", "")})
    try:
        _initialize(process)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        assert process.stdout is not None
        # Only the server holds the pipe's far end: its end of file is the server's end.
        done = []
        reader = threading.Thread(target=lambda: done.append(process.stdout.read()), daemon=True)
        reader.start()
        wait_until(lambda: done, timeout=30, what="the server's stdout to end")
        assert done == [b""]
    finally:
        if process.poll() is None:
            process.kill()
