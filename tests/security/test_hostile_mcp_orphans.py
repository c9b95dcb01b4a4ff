"""Nothing an MCP server started outlives the app: a grandchild it starts with `setsid`
(out of the server's process group) is gone once the app quits, headless and in the TUI,
and once a server is stopped (H10)."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml
from helpers import run_headless, write_config
from mcp_servers import stdio_entry
from security.test_hostile_mcp import manager_for
from waits import wait_until

from agent.config import load_config
from agent.mcp.connection import State
from agent.scripted import Script, ScriptedServer


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")


def orphan_pid(pid_file, timeout=30) -> int:
    """The `setsid` grandchild's pid, once the server wrote it, checked to be running."""
    wait_until(pid_file.exists, timeout=timeout, what="the server wrote its grandchild's pid")
    pid = int(pid_file.read_text())
    assert alive(pid)
    return pid


def orphan_entry(pid_file) -> dict:
    """The `orphan` test server, writing its grandchild's pid to `pid_file`."""
    entry = stdio_entry("orphan")
    return {**entry, "args": [*entry["args"], str(pid_file)]}


def kill_if_left(pid_file) -> None:
    """A failing test must not leave a `sleep 1000` behind."""
    if pid_file.exists():
        pid = int(pid_file.read_text())
        if alive(pid):
            os.kill(pid, 9)


def test_a_setsid_grandchild_ends_with_its_server(hermes_home, tmp_path):
    """H10: stopping the manager (the app's MCP part) ends the server's whole tree."""
    pid_file = tmp_path / "orphan.pid"
    manager = manager_for(hermes_home, tmp_path, {"o": orphan_entry(pid_file)})
    try:
        server = manager.get("o")
        wait_until(lambda: server.state != State.STARTING, timeout=30, what="the server started")
        assert server.state == State.READY, server.error
        pid = orphan_pid(pid_file)
        manager.close()
        wait_until(lambda: not alive(pid), timeout=10, what="the grandchild ended")
    finally:
        manager.close()
        kill_if_left(pid_file)


def test_headless_a_setsid_grandchild_is_gone_after_the_run(hermes_home, tmp_path):
    """H10: `hermes-tui run` quits, and the grandchild its server started has ended."""
    pid_file = tmp_path / "orphan.pid"
    try:
        with ScriptedServer(Script.from_dict({"replies": [{"text": "done"}]})) as server:
            path = write_config(hermes_home, server)
            data = yaml.safe_load(path.read_text())
            data["mcp_servers"] = {"o": orphan_entry(pid_file)}
            data["mcp"] = {"turn_wait_seconds": 20}
            path.write_text(yaml.safe_dump(data))
            proc = run_headless(hermes_home, tmp_path, "go", timeout=90)
        assert proc.returncode == 0, proc.stderr[-2000:]
        pid = int(pid_file.read_text())
        wait_until(lambda: not alive(pid), timeout=10, what="the grandchild ended")
    finally:
        kill_if_left(pid_file)


async def test_tui_a_setsid_grandchild_is_gone_after_quit(
    make_app, scripted, hermes_home, tmp_path
):
    """H10: the TUI quits (pilot), and the grandchild its server started has ended."""
    from waits import wait_until as wait_sync

    pid_file = tmp_path / "orphan.pid"
    server = scripted({"replies": [{"text": "done"}]})
    app = make_app(server)
    path = hermes_home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"] = {"o": orphan_entry(pid_file)}
    path.write_text(yaml.safe_dump(data))
    app.config = load_config()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await app.ready()
            await wait_until(pilot, lambda: app.runtime.mcp.tools(), timeout=30)
            pid = orphan_pid(pid_file)
        # The pilot's context has quit the app: its runtime closed, as on a real quit.
        wait_sync(lambda: not alive(pid), timeout=10, what="the grandchild ended")
    finally:
        kill_if_left(pid_file)


KILLED_APP = """
import os, signal, sys, time, pathlib
sys.path.insert(0, {tests!r})
from security.test_hostile_mcp import manager_for
from security.test_hostile_mcp_orphans import orphan_entry
pid_file = pathlib.Path({pid_file!r})
manager_for(pathlib.Path({home!r}), pathlib.Path({workspace!r}), {{"o": orphan_entry(pid_file)}})
deadline = time.monotonic() + 30
while not pid_file.exists() and time.monotonic() < deadline:
    time.sleep(0.05)  # another process's file: nothing to wait on but its existence
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_setsid_grandchild_is_gone_when_the_app_is_killed(hermes_home, tmp_path):
    """H10: an app killed with SIGKILL closes nothing itself; its server sees stdin close and
    exits, and the keeper ends the rest of the tree (its death signal, PR_SET_PDEATHSIG, is
    the backstop for a server that ignores a closed stdin)."""
    from pathlib import Path

    pid_file = tmp_path / "orphan.pid"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = KILLED_APP.format(
        tests=str(Path(__file__).parent.parent),
        pid_file=str(pid_file),
        home=str(hermes_home),
        workspace=str(workspace),
    )
    try:
        proc = subprocess.run([sys.executable, "-c", code], timeout=60, capture_output=True)
        assert proc.returncode == -9, proc.stderr[-2000:]
        pid = int(pid_file.read_text())
        wait_until(lambda: not alive(pid), timeout=10, what="the grandchild ended")
    finally:
        kill_if_left(pid_file)
