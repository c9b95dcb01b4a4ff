"""A hostile pattern or workspace cannot freeze the search tools, and a stop ends them (H6).

Python's backtracking `re` takes exponential time on `(a+)+$` against 41 `a`s and a `!`,
and holds the GIL throughout, so the app froze until kill -9. The guarded runs happen in a
subprocess with a timeout, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

from helpers import write_config

from agent.scripted import Script, ScriptedServer
from agent.tools import ToolContext, default_registry, search

HOSTILE_LINE = "a" * 41 + "!\n"


def run_python(code: str, cwd, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_catastrophic_regex_and_glob_return_promptly_in_the_registry(tmp_path):
    (tmp_path / "hostile.txt").write_text(HOSTILE_LINE)
    (tmp_path / ("a" * 60)).write_text("x\n")
    proc = run_python(
        """
        import json, time
        from agent.tools import ToolContext, default_registry
        reg, ctx = default_registry(), ToolContext(".", approval_mode="yolo")
        calls = [
            ("grep", {"pattern": "(a+)+$", "path": "hostile.txt"}),
            ("grep", {"pattern": "(a|aa)+$"}),
            ("glob", {"pattern": "*a" * 15 + "*b"}),
            ("grep", {"pattern": "x", "glob": "*a" * 15 + "*b"}),
        ]
        out = []
        for name, args in calls:
            start = time.monotonic()
            result = reg.run(name, args, ctx)
            out.append([result.ok, result.output, time.monotonic() - start])
        print(json.dumps(out))
        """,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert [ok for ok, _out, _s in results] == [True] * 4
    assert results[0][1] == "No matches for '(a+)+$' in hostile.txt."
    assert all(seconds < 5 for _ok, _out, seconds in results), results
    assert proc.stderr == ""


def test_catastrophic_regex_through_the_agent_headless(hermes_home, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hostile.txt").write_text(HOSTILE_LINE)
    grep = {"pattern": "(a+)+$", "path": "hostile.txt"}
    script = {
        "replies": [
            {"tool_calls": [{"id": "g1", "name": "grep", "arguments": grep}]},
            {"text": "searched"},
        ]
    }
    with ScriptedServer(Script.from_dict(script)) as server:
        write_config(hermes_home, server)
        env = {**os.environ, "HERMES_TUI_HOME": str(hermes_home)}
        proc = subprocess.run(
            [sys.executable, "-m", "hermes_tui", "run", "--yes", "look for it"],
            capture_output=True,
            text=True,
            cwd=workspace,
            env=env,
            timeout=60,
        )
        bodies = [r.body for r in server.requests_for()]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "searched"
    tool_results = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_results[0]["content"] == "No matches for '(a+)+$' in hostile.txt."


def _costly_files(root, count: int, size: int) -> None:
    """Files of random a/b lines: RE2 needs its slow NFA for the pattern below on them."""
    table = bytes(b"\n"[0] if i < 2 else b"ab"[i & 1] for i in range(256))
    for i in range(count):
        (root / f"data{i}.txt").write_bytes(os.urandom(size).translate(table))


COSTLY = "[ab]*a[ab]{150}c"  # never matches (no c), defeats RE2's DFA: ~2 s per 3 MB file


class SliceCount:
    """A grep's compiled pattern that counts the RE2 calls begun after the stop.

    H6's second is one slice of RE2 work (GREP_SLICE_WORK, milliseconds) between two looks at
    the stop flag: at most one call may begin after the stop (the look before it came just
    before the stop), whatever the machine's load; the whole search would take many more.
    """

    def __init__(self, regex, cancel: threading.Event) -> None:
        self.regex, self.cancel, self.after_stop = regex, cancel, 0

    def search(self, *args):
        if self.cancel.is_set():
            self.after_stop += 1
        return self.regex.search(*args)

    def __getattr__(self, name):
        return getattr(self.regex, name)


def counting_slices(monkeypatch, started: threading.Event) -> list[SliceCount]:
    """Wrap each grep's pattern in a SliceCount (returned in the list); `started` is set
    when the first file's search begins."""
    counts: list[SliceCount] = []
    original = search._Grep.search

    def search_file(self, rel, data):
        if not isinstance(self.regex, SliceCount):
            self.regex = SliceCount(self.regex, self.ctx.cancel)
            counts.append(self.regex)
        started.set()
        return original(self, rel, data)

    monkeypatch.setattr(search._Grep, "search", search_file)
    return counts


def test_a_stop_during_a_long_grep_ends_it_within_a_second(tmp_path, monkeypatch):
    _costly_files(tmp_path, count=8, size=3 * 1024 * 1024)
    started = threading.Event()
    counts = counting_slices(monkeypatch, started)
    cancel = threading.Event()
    ctx = ToolContext(tmp_path, approval_mode="yolo", cancel=cancel)
    outcome = []
    worker = threading.Thread(
        target=lambda: outcome.append(default_registry().run("grep", {"pattern": COSTLY}, ctx))
    )
    worker.start()
    try:
        assert started.wait(30)
        stopped_at = time.monotonic()
        cancel.set()
        worker.join(30)
        ended_after = time.monotonic() - stopped_at
    finally:
        cancel.set()
        worker.join(30)
    [count] = counts
    assert count.after_stop <= 1, f"{count.after_stop} RE2 slices ran after the stop"
    assert outcome and not outcome[0].ok
    assert outcome[0].output == "The search was cancelled."
    assert ended_after < 5, f"the grep ran on for {ended_after:.2f} s after the stop"


def test_a_stop_during_a_long_grep_ends_the_agent_turn_within_a_second(
    hermes_home, tmp_path, monkeypatch
):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _costly_files(workspace, count=8, size=3 * 1024 * 1024)
    started = threading.Event()
    counts = counting_slices(monkeypatch, started)
    calls = [{"id": "g1", "name": "grep", "arguments": {"pattern": COSTLY}}]
    script = {"replies": [{"tool_calls": calls}, {"text": "never reached"}]}
    from agent.config import load_config
    from agent.loop import Agent

    with ScriptedServer(Script.from_dict(script)) as server:
        write_config(hermes_home, server)
        agent = Agent(load_config(), workspace=workspace)
        outcome = []
        worker = threading.Thread(target=lambda: outcome.append(agent.run_turn("search")))
        worker.start()
        try:
            assert started.wait(30)
            stopped_at = time.monotonic()
            agent.stop()
            worker.join(30)
            ended_after = time.monotonic() - stopped_at
        finally:
            agent.stop()
            worker.join(30)
            agent.close()
    [count] = counts
    assert count.after_stop <= 1, f"{count.after_stop} RE2 slices ran after the stop"
    assert outcome and outcome[0].status == "stopped"
    assert ended_after < 5, f"the turn ran on for {ended_after:.2f} s after the stop"
