"""One hook run, a real process (SPEC N4): its stdin, its capped output, its keys withheld,
its group killed at the timeout and after it exits; and how its answer is read."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from waits import wait_until

from agent.hooks.answers import Decision, answer_of
from agent.hooks.process import OUTPUT_CAP, HookRun, run_command

PY = sys.executable


def run_py(tmp_path: Path, body: str, *, timeout: float = 10, **kw) -> HookRun:
    path = tmp_path / "hook.py"
    path.write_text("import json, os, sys, subprocess, time\n" + body)
    return run_command(f"{PY} {path}", b'{"event": "prompt"}', cwd=tmp_path, timeout=timeout, **kw)


def test_n4_the_event_arrives_on_stdin_and_the_hook_runs_in_the_workspace(tmp_path):
    """N4: JSON on stdin, the workspace as cwd, the event named in the environment."""
    run = run_py(
        tmp_path,
        "print(json.load(sys.stdin)['event'], os.getcwd(), os.environ['HERMES_TUI_HOOK_EVENT'])",
        extra_env={"HERMES_TUI_HOOK_EVENT": "prompt"},
    )
    assert run.exit_code == 0
    assert run.stdout.split() == ["prompt", str(tmp_path), "prompt"]


def test_n4_keys_are_withheld_from_a_hook(tmp_path, monkeypatch):
    """N4, H5: a key variable the agent withholds from tools is not in a hook's environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-hidden-1234567890")
    run = run_py(
        tmp_path, "print(os.environ.get('OPENAI_API_KEY', 'absent'))", hidden_env={"OPENAI_API_KEY"}
    )
    assert run.stdout.strip() == "absent"


def test_n4_stdout_and_stderr_are_capped_and_drained(tmp_path):
    """N4: 1 MB on each pipe: the first 64 KB kept, the rest drained (the hook never blocks)."""
    run = run_py(tmp_path, "sys.stdout.write('o' * 1_000_000); sys.stderr.write('e' * 1_000_000)")
    assert run.exit_code == 0 and run.truncated
    assert len(run.stdout) == OUTPUT_CAP and len(run.stderr) == OUTPUT_CAP


def child_of(tmp_path: Path) -> str:
    """Hook code that starts a child which writes its pid and sleeps a minute."""
    child = tmp_path / "child.py"
    pid = tmp_path / "child.pid"
    writes_pid = "pathlib.Path(" + repr(str(pid)) + ").write_text(str(os.getpid()))"
    child.write_text("import os, time, pathlib\n" + writes_pid + "\ntime.sleep(60)\n")
    return (
        f"subprocess.Popen([sys.executable, {str(child)!r}])\n"
        f"while not os.path.exists({str(pid)!r}): time.sleep(0.01)\n"
    )


WITHIN = 15.0
"""A quarter of the hooks' 60 s sleeps (and the stopped hook's 60 s timeout): a run that waited
for them takes the whole minute; a loaded machine's Python start-ups fit in the rest."""


def running(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def test_n4_at_its_timeout_the_whole_group_is_killed(tmp_path):
    """N4: a hook and the child it started are killed at the timeout; the run returns then."""
    started = time.monotonic()
    run = run_py(tmp_path, child_of(tmp_path) + "time.sleep(60)\n", timeout=1)
    assert run.timed_out and run.exit_code is None
    assert time.monotonic() - started < WITHIN
    pid = int((tmp_path / "child.pid").read_text())
    wait_until(lambda: not running(pid), timeout=5, what="the hook's child killed")


def test_n4_what_a_hook_leaves_running_is_killed_when_it_exits(tmp_path):
    """N4, H10: a background child holding the pipes neither holds the run nor outlives it."""
    started = time.monotonic()
    run = run_py(tmp_path, child_of(tmp_path) + "print('done')\n", timeout=30)
    assert run.exit_code == 0 and run.stdout.strip() == "done"
    assert time.monotonic() - started < WITHIN
    pid = int((tmp_path / "child.pid").read_text())
    wait_until(lambda: not running(pid), timeout=5, what="the hook's child killed")


def test_n4_a_stop_ends_a_running_hook(tmp_path):
    """N4: the turn's stop flag ends the hook at once, not at its timeout."""
    import threading

    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    run = run_py(tmp_path, "time.sleep(60)", timeout=60, cancel=cancel)
    assert run.stopped and time.monotonic() - started < WITHIN


def done(code: int | None = 0, out: str = "", err: str = "", **kw) -> HookRun:
    return HookRun(code, out, err, 0.1, **kw)


@pytest.mark.parametrize(
    ("run", "event", "decision", "reason", "context", "error"),
    [
        (done(0, "plain words"), "after_tool", Decision.NONE, "", "plain words", ""),
        (done(0, '{"decision": "allow"}'), "before_tool", Decision.ALLOW, "", "", ""),
        (done(0, '{"decision": "ask"}'), "before_tool", Decision.ASK, "", "", ""),
        (done(0, '{"decision": "deny", "reason": "r"}'), "before_tool", Decision.DENY, "r", "", ""),
        (done(0, '{"decision": "block", "reason": "r"}'), "turn_end", Decision.DENY, "r", "", ""),
        (done(0, '{"additionalContext": "c"}'), "prompt", Decision.NONE, "", "c", ""),
        (done(2, "out", "why not"), "before_tool", Decision.DENY, "why not", "", ""),
        (done(2, "out only"), "prompt", Decision.DENY, "out only", "", ""),
        (done(1, "", "Traceback\nboom"), "before_tool", Decision.NONE, "", "", "failed (exit 1"),
        (done(-9), "prompt", Decision.NONE, "", "", "killed by SIGKILL"),
        (done(0, '{"decision": "maybe"}'), "before_tool", Decision.NONE, "", "", "'maybe' is not"),
        (done(0, '{"decision": "allow"}'), "turn_end", Decision.NONE, "", "", "is not one of"),
        (done(0, "{broken"), "prompt", Decision.NONE, "", "", "not a JSON object"),
        (done(None, timed_out=True), "prompt", Decision.NONE, "", "", "timed out after 2 s"),
        (done(None, failed_to_start="No such file"), "prompt", Decision.NONE, "", "", "could not"),
    ],
)
def test_n4_an_answer_is_read_the_way_claude_code_hooks_answer(
    run, event, decision, reason, context, error
):
    """N4: exit 0 with JSON or text, exit 2 with stderr, anything else an error (never a "no")."""
    answer = answer_of(run, event, 2)
    assert (answer.decision, answer.reason, answer.context) == (decision, reason, context)
    assert error in answer.error if error else not answer.error


@pytest.mark.parametrize(
    ("pattern", "tool", "expected"),
    [
        ("*", "run_shell", True),
        ("run_shell", "run_shell", True),
        ("run_shell", "run_shell_x", False),
        ("write_file|edit_file", "edit_file", True),
        ("write_file | edit_file", "read_file", False),
        ("mcp__git__*", "mcp__git__log", True),
        ("mcp__git__*", "mcp__github__log", False),
        ("", "run_shell", False),
    ],
)
def test_n4_match_is_a_tool_name_pattern_with_alternatives(pattern, tool, expected):
    """N4: `match` selects tools by fnmatch pattern; `|` separates alternatives."""
    from agent.hooks.engine import matches

    assert matches(pattern, tool) is expected
