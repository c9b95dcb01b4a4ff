"""Quitting the app ends every process run_shell started, running or left in the background (H6)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from ui.tui_helpers import reply, run_turn
from waits import wait_until

from agent.tools.shell import CHILDREN

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group `pgid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(name))
    return found


def shell_call(command: str) -> dict:
    return reply(tool_calls=[{"id": "s1", "name": "run_shell", "arguments": {"command": command}}])


async def test_quitting_kills_a_background_job_a_finished_command_left(
    make_app, scripted_in_process, workspace
):
    command = "sleep 100 >/dev/null 2>&1 & echo $! > bg.pid"
    server = scripted_in_process({"replies": [shell_call(command), reply("started it")]})
    app = make_app(server, approval="yolo")
    async with app.run_test(size=(100, 30)) as pilot:
        await run_turn(pilot, "start a server")
        pid = int((workspace / "bg.pid").read_text())
        assert alive(pid)
    try:
        wait_until(lambda: not alive(pid), timeout=20)  # the sleep would last 100 s
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_quitting_during_a_command_kills_its_whole_group(
    make_app, scripted_in_process, workspace
):
    server = scripted_in_process(
        {"replies": [shell_call("sleep 100 & sleep 100; wait"), reply("done")]}
    )
    app = make_app(server, approval="yolo")
    before = set(CHILDREN.live())
    async with app.run_test(size=(100, 30)) as pilot:
        await app.submit("run it")
        await wait_until(pilot, lambda: set(CHILDREN.live()) - before, what="the shell")
        (pgid,) = set(CHILDREN.live()) - before
        await wait_until(pilot, lambda: len(members(pgid)) >= 3, what="bash and both sleeps")
    wait_until(lambda: not members(pgid), timeout=20)  # the sleeps would last 100 s
