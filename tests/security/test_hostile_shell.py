"""run_shell children cannot outlive a stop, a timeout or the app (H6).

Each command runs in a process group of its own; the checks below read /proc (or signal 0)
to prove that no process of the group survives, zombies waiting for init aside.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from helpers import write_config
from waits import wait_until

from agent.scripted import Script, ScriptedServer
from agent.tools import ToolContext, default_registry
from agent.tools.shell import CHILDREN, TERM_GRACE

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


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


def alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


class Running:
    """A run_shell call on a worker thread, with the process group it started."""

    def __init__(self, workspace: Path, command: str, **args) -> None:
        self.cancel = threading.Event()
        self.ctx = ToolContext(workspace, approval_mode="yolo", cancel=self.cancel)
        self.result = None
        before = set(CHILDREN.live())
        self.thread = threading.Thread(target=self._run, args=({"command": command, **args},))
        self.thread.start()
        self.pgid = wait_until(lambda: (set(CHILDREN.live()) - before or {0}).pop())

    def _run(self, args) -> None:
        self.result = default_registry().run("run_shell", args, self.ctx)

    def stop(self) -> float:
        """Set the cancel event; the seconds until run_shell returned (a minute at most)."""
        stopped_at = time.monotonic()
        self.cancel.set()
        self.thread.join(60)
        return time.monotonic() - stopped_at

    def finish(self) -> None:
        self.cancel.set()
        self.thread.join(10)
        for pid in members(self.pgid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def running(tmp_path):
    runs: list[Running] = []

    def start(command: str, **args) -> Running:
        run = Running(tmp_path, command, **args)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.finish()


GRANDCHILD = "sleep 100 & sleep 100; wait"
STOPPED_WITHIN = 10.0
"""A stop that did not kill the group would wait for its 100 s sleeps (Running.stop gives up
after a minute); H6's second is the poll and SIGTERM grace, held by test_stop_budget.py, so
this bound can leave a loaded machine its slack."""


def test_stop_kills_the_whole_group_grandchild_included(running):
    run = running(GRANDCHILD)
    wait_until(lambda: len(members(run.pgid)) >= 3)  # bash and both sleeps
    assert run.stop() < STOPPED_WITHIN
    assert "cancelled by the user" in run.result.output
    wait_until(lambda: not members(run.pgid), timeout=10)  # SIGKILL lands asynchronously


def test_timeout_kills_the_whole_group_grandchild_included(running):
    run = running(GRANDCHILD, timeout=1)
    wait_until(lambda: len(members(run.pgid)) >= 3)
    run.thread.join(5)
    assert not run.thread.is_alive()
    assert "timed out after 1 s" in run.result.output
    wait_until(lambda: not members(run.pgid), timeout=10)


def test_a_child_that_ignores_sigterm_is_sigkilled(running):
    # The ignored SIGTERM is inherited by both sleeps; only SIGKILL ends them.
    run = running("trap '' TERM; sleep 100 & sleep 100; wait")
    wait_until(lambda: len(members(run.pgid)) >= 3)
    took = run.stop()
    # The grace was waited (SIGTERM was ignored), then SIGKILL ended the sleeps at once.
    assert TERM_GRACE <= took < TERM_GRACE + STOPPED_WITHIN
    wait_until(lambda: not members(run.pgid), timeout=10)


def test_a_grandchild_that_left_the_group_cannot_block_the_read(running, tmp_path):
    # setsid puts the grandchild in a session of its own, out of reach of the group kill,
    # while it still holds the output pipe open: the read must end anyway.
    run = running("setsid sleep 100 & echo $! > escaped.pid; sleep 100")
    written = tmp_path / "escaped.pid"
    # The shell may not have made the file yet: a missing file is not yet, not a failure.
    pid = int(wait_until(lambda: written.exists() and written.read_text().strip()))
    try:
        wait_until(lambda: alive(pid))
        assert run.stop() < STOPPED_WITHIN
        assert "cancelled by the user" in run.result.output
    finally:
        os.kill(pid, signal.SIGKILL)


def test_background_jobs_left_by_a_finished_command_end_at_exit(tmp_path):
    # atexit: a program that uses the agent's tools without the app still cleans up.
    code = """
        from agent.tools import ToolContext, default_registry
        command = "sleep 100 >/dev/null 2>&1 & echo $! > bg.pid"
        result = default_registry().run("run_shell", {"command": command},
                                        ToolContext(".", approval_mode="yolo"))
        assert result.ok, result.output
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=30,
    )
    pid = int((tmp_path / "bg.pid").read_text())
    try:
        assert proc.returncode == 0, proc.stderr
        wait_until(lambda: not alive(pid), timeout=20)  # the sleep would last 100 s
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_headless_exit_kills_what_run_shell_left_running(hermes_home, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # Found by its command line, not `$!`: under the sandbox the shell's pids are its own.
    command = "sleep 100.4171 >/dev/null 2>&1 &"
    script = {
        "replies": [
            {"tool_calls": [{"id": "s1", "name": "run_shell", "arguments": {"command": command}}]},
            {"text": "started it"},
        ]
    }
    with ScriptedServer(Script.from_dict(script)) as server:
        write_config(hermes_home, server)
        env = {**os.environ, "HERMES_TUI_HOME": str(hermes_home)}
        proc = subprocess.run(
            [sys.executable, "-m", "hermes_tui", "run", "--yes", "start a server"],
            capture_output=True,
            text=True,
            cwd=workspace,
            env=env,
            timeout=60,
        )

    def left() -> list[int]:
        found = subprocess.run(["pgrep", "-f", "sleep 100.4171"], capture_output=True, text=True)
        return [int(pid) for pid in found.stdout.split() if alive(int(pid))]

    try:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "started it"
        wait_until(lambda: not left(), timeout=20)  # the sleep would last 100 s
    finally:
        for pid in left():
            os.kill(pid, signal.SIGKILL)
