"""run_shell: exit codes, output cap, timeout, cancellation, process groups."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from waits import wait_until

from agent.tools import ToolContext


def test_runs_in_workspace_with_combined_output(reg, ws, yolo):
    (ws / "marker.txt").touch()
    result = reg.run("run_shell", {"command": "pwd; ls; echo oops >&2"}, yolo)
    assert result.ok
    lines = result.output.splitlines()
    assert lines[0] == str(ws)
    assert "marker.txt" in lines and "oops" in lines
    assert lines[-1] == "[exit code 0]"


def test_nonzero_exit_is_not_ok_but_keeps_output(reg, yolo):
    result = reg.run("run_shell", {"command": "echo before; exit 3"}, yolo)
    assert not result.ok
    assert result.output == "before\n[exit code 3]"


def test_no_output_and_bash_features(reg, yolo):
    assert reg.run("run_shell", {"command": "true"}, yolo).output == "(no output)\n[exit code 0]"
    result = reg.run("run_shell", {"command": "[[ 1 == 1 ]] && echo bash"}, yolo)
    assert result.output.startswith("bash")


def test_stdin_is_closed(reg, yolo):
    result = reg.run("run_shell", {"command": "cat; echo done"}, yolo)
    assert result.ok and result.output.startswith("done")


def test_output_cap_keeps_head_and_tail(reg, ws):
    ctx = ToolContext(ws, approval_mode="yolo", output_cap=2000)
    cmd = "echo HEAD; head -c 200000 /dev/zero | tr '\\0' x; echo; echo TAIL"
    result = reg.run("run_shell", {"command": cmd}, ctx)
    assert result.ok
    assert result.output.startswith("HEAD\n")
    assert result.output.endswith("TAIL\n[exit code 0]")
    assert "characters omitted ...]" in result.output
    assert len(result.output) <= 2000


def _alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_timeout_kills_process_group(reg, ws):
    ctx = ToolContext(ws, approval_mode="yolo")
    cmd = "echo started; sleep 60 & echo $! > bg.pid; sleep 60"
    start = time.monotonic()
    result = reg.run("run_shell", {"command": cmd, "timeout": 0.5}, ctx)
    elapsed = time.monotonic() - start
    assert not result.ok
    assert "started" in result.output and "timed out after 0.5 s" in result.output
    assert elapsed < 15  # a quarter of the sleeps' minute: they were killed, not waited for
    pid = int((ws / "bg.pid").read_text())
    # SIGKILL delivery is asynchronous.
    wait_until(lambda: not _alive(pid), timeout=10, what="the background job to die")


def test_context_timeout_is_default(reg, ws):
    ctx = ToolContext(ws, approval_mode="yolo", shell_timeout=0.3)
    result = reg.run("run_shell", {"command": "sleep 10"}, ctx)
    assert not result.ok and "timed out after 0.3 s" in result.output


def test_cancel_event_kills_promptly(reg, ws):
    cancel = threading.Event()
    ctx = ToolContext(ws, approval_mode="yolo", cancel=cancel)
    set_at: list[float] = []

    def fire():
        set_at.append(time.monotonic())
        cancel.set()

    timer = threading.Timer(0.3, fire)
    timer.start()
    try:
        result = reg.run("run_shell", {"command": "echo working; sleep 60"}, ctx)
        returned = time.monotonic()
    finally:
        timer.cancel()
    assert not result.ok
    assert "cancelled" in result.output and "working" in result.output
    # The cancel, not the minute's sleep, ended it; H6's second (one poll and the SIGTERM
    # grace) is held without a clock by tests/unit/agent/test_stop_budget.py.
    assert returned - set_at[0] < 10


def test_cancel_already_set_does_not_run(reg, ws):
    cancel = threading.Event()
    cancel.set()
    ctx = ToolContext(ws, approval_mode="yolo", cancel=cancel)
    result = reg.run("run_shell", {"command": "touch ran"}, ctx)
    assert not result.ok
    assert not (ws / "ran").exists()


def test_background_child_holding_pipe_does_not_hang(reg, yolo):
    start = time.monotonic()
    result = reg.run("run_shell", {"command": "sleep 60 & echo bg"}, yolo)
    assert time.monotonic() - start < 15  # ORPHAN_GRACE (0.5 s), not the child's minute
    assert result.ok and result.output.startswith("bg")


def test_detached_background_is_left_alone(reg, ws, yolo):
    result = reg.run("run_shell", {"command": "(sleep 0.2; touch later) >/dev/null 2>&1 &"}, yolo)
    assert result.ok


def test_bad_timeout(reg, yolo):
    result = reg.run("run_shell", {"command": "true", "timeout": 0}, yolo)
    assert not result.ok and "positive" in result.output


def test_killed_by_signal(reg, yolo):
    result = reg.run("run_shell", {"command": "kill -9 $$"}, yolo)
    assert not result.ok and "SIGKILL" in result.output
