"""Storage trouble in headless runs (H7): one sentence, no traceback, nothing lost.

Every run is a real `hermes-tui` run against the scripted server (in this process where the
process boundary is not the subject: see `run`), on a real SQLite file that another
connection locks, that is read-only, or that is damaged. Lock windows and exit waits are
made small in config.yaml, so no test waits for the real defaults.
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from headless_inprocess import run_cli_in_process
from helpers import held_write_lock, write_config
from waits import wait_until

from agent.scripted import Script, ScriptedServer

SAVING_WAITS = "hermes-tui: Saving is waiting: the session database"
LOCK_WINDOW = 0.2  # storage.lock_timeout_seconds in these runs
LOG_LINES = ("WARNING", "ERROR", "session write failed", "token accounting", "Traceback")

# Root ignores file modes; a run meant to meet a read-only file drops the capabilities that
# let it (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER) from its bounding set first.
_WITHOUT_FILE_OVERRIDE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for cap in (1, 2, 3):
    if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
        raise SystemExit(f"cannot drop capability {cap}: errno {ctypes.get_errno()}")
os.execv(sys.argv[1], sys.argv[1:])
"""


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hermes_tui", *args]


def as_plain_user(command: list[str]) -> list[str]:
    """`command`, run so that file permissions bind it even when the tests run as root."""
    if os.geteuid() != 0:
        return command
    return [sys.executable, "-c", _WITHOUT_FILE_OVERRIDE, *command]


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return env


def run(home: Path, *args: str, cwd: Path | None = None, plain_user: bool = False):
    """`hermes-tui ARGS`: in this process (the sentence and the stored rows are the subject),
    or as a process of its own with `plain_user` (it drops capabilities first)."""
    if not plain_user:
        return run_cli_in_process(list(args), env=env_for(home), cwd=cwd)
    return subprocess.run(
        as_plain_user(cli(*args)),
        capture_output=True,
        text=True,
        env=env_for(home),
        cwd=cwd,
        timeout=60,
    )


def assert_one_sentence(proc, *needles: str) -> str:
    """Exit 1, no traceback, no log record on stderr: just one `hermes-tui:` sentence."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hermes-tui: "), proc.stderr
    assert "internal error" not in lines[0].lower(), "a storage failure is no bug"
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def stored(home: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return conn.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()


def set_storage(home: Path, **storage: float) -> None:
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["storage"] = storage
    path.write_text(yaml.safe_dump(config))


class Run:
    """A `hermes-tui run` in the background whose stderr lines the test can wait for."""

    def __init__(self, home: Path, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            cli("run", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env_for(home),
            cwd=cwd,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._out: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_stderr, daemon=True),
            threading.Thread(target=lambda: self._out.append(self.proc.stdout.read()), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self._queue.get(timeout=max(0.01, timeout))
        except queue.Empty:
            raise AssertionError(f"stderr is silent: {self.lines}") from None

    def wait_line(self, needle: str, timeout: float = 20) -> str:
        """Block until a stderr line contains needle (fail if the run ends first)."""
        deadline = time.monotonic() + timeout
        while not any(needle in line for line in self.lines):
            line = self._next_line(deadline - time.monotonic())
            if line is None:
                raise AssertionError(f"the run ended without {needle!r}: {self.lines}")
            self.lines.append(line)
        return next(line for line in self.lines if needle in line)

    def finish(self, timeout: float = 30) -> tuple[int, str, float]:
        """Wait for the run to end: (exit code, stdout, seconds waited)."""
        started = time.monotonic()
        code = self.proc.wait(timeout)
        waited = time.monotonic() - started
        while (line := self._next_line(5)) is not None:
            self.lines.append(line)
        for reader in self._readers:
            reader.join(5)
        return code, "".join(self._out), waited

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def serve(hermes_home):
    servers: list[ScriptedServer] = []

    def start(replies: list[dict], **storage: float) -> ScriptedServer:
        server = ScriptedServer(Script.from_dict({"replies": replies})).start()
        servers.append(server)
        write_config(hermes_home, server)
        set_storage(hermes_home, **storage)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello from the readme\n")
    return root


def make_database(home: Path, workspace: Path) -> None:
    """A database with one earlier session, as a user's would have."""
    proc = run(home, "run", "earlier task", cwd=workspace)
    assert proc.returncode == 0, proc.stderr


TOOL_TURN = [
    {
        "text": "Let me read it.",
        "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}}],
        "usage": {"input_tokens": 100, "output_tokens": 10},
        "gate": "locked",
    },
    {"text": "It says hello.", "usage": {"input_tokens": 120, "output_tokens": 5}},
]


def test_a_lock_when_the_session_is_created_is_one_sentence_and_exit_1(
    hermes_home, serve, workspace
):
    server = serve([{"text": "never asked"}], lock_timeout_seconds=0.2)
    run(hermes_home, "sessions", "list")  # the database exists, empty
    with held_write_lock(hermes_home / "state.db"):
        proc = run(hermes_home, "run", "do the thing", cwd=workspace)
    assert_one_sentence(proc, str(hermes_home / "state.db"), "is locked by another process")
    assert server.requests_for() == [], "nothing was sent: the task did not start"
    assert stored(hermes_home) == []
    # The record behind the sentence is in the log file, not on the terminal.
    log = (hermes_home / "logs" / "hermes-tui.log").read_text()
    assert "turn ended by a storage failure" in log


def test_a_lock_held_mid_turn_past_the_lock_window_loses_nothing(hermes_home, serve, workspace):
    server = serve([{"text": "done"}], lock_timeout_seconds=LOCK_WINDOW, exit_wait_seconds=30)
    make_database(hermes_home, workspace)
    server.set_script(Script.from_dict({"replies": TOOL_TURN}))
    asked = len(server.requests_for())
    job = Run(hermes_home, workspace, "read the readme")
    try:
        # The user message is on disk before the model is asked (S8); then the lock.
        wait_until(lambda: len(server.requests_for()) > asked, timeout=20)
        with held_write_lock(hermes_home / "state.db") as release:
            server.open_gate("locked")
            # A lock window runs out mid-turn: said once, as a wait, and the turn goes on.
            job.wait_line(SAVING_WAITS)
            waiting = job.wait_line("for the database lock on")
            # Held on through the exit for several more lock windows: the lock, not the
            # test, sets this pace (the writes must outlive every window of it).
            time.sleep(5 * LOCK_WINDOW)
            release.set()
        code, out, _ = job.finish()
    finally:
        job.kill()
    assert code == 0, job.lines
    assert "Let me read it." in out and "It says hello." in out
    assert waiting.startswith("hermes-tui: waiting up to ")
    assert "to save 3 messages" in waiting
    assert not [line for line in job.lines if any(word in line for word in LOG_LINES)]
    rows = [r for r in stored(hermes_home) if r[1] != "earlier task"][-4:]
    assert [role for role, _ in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[0][1] == "read the readme" and rows[1][1] == "Let me read it."
    assert "hello from the readme" in rows[2][1] and rows[3][1] == "It says hello."
    conn = sqlite3.connect(hermes_home / "state.db")
    calls = conn.execute("SELECT max(api_call_count) FROM sessions").fetchone()[0]
    conn.close()
    assert calls == 2, "the token counts of both model calls landed too"


def test_the_exit_wait_is_bounded_and_says_what_was_not_saved(hermes_home, serve, workspace):
    server = serve([{"text": "done"}], lock_timeout_seconds=0.2, exit_wait_seconds=1)
    make_database(hermes_home, workspace)
    server.set_script(Script.from_dict({"replies": TOOL_TURN}))
    asked = len(server.requests_for())
    job = Run(hermes_home, workspace, "read the readme")
    try:
        wait_until(lambda: len(server.requests_for()) > asked, timeout=20)
        with held_write_lock(hermes_home / "state.db"):
            server.open_gate("locked")
            job.wait_line("for the database lock on")
            code, out, waited = job.finish()
    finally:
        job.kill()
    assert code == 1, job.lines
    assert "It says hello." in out, "the answer is shown even though it was not saved"
    assert waited < 10, "the exit wait is bounded by exit_wait_seconds"
    assert job.lines[-1].startswith("hermes-tui: Not saved: 3 messages"), job.lines
    assert "still locked by another process" in job.lines[-1]
    assert "Traceback" not in "\n".join(job.lines)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_read_only_database_is_one_sentence_naming_the_file(hermes_home, serve, workspace, what):
    serve([{"text": "first"}, {"text": "never asked"}])
    make_database(hermes_home, workspace)
    db = hermes_home / "state.db"
    files = sorted(hermes_home.glob("state.db*"))
    modes = {path: stat.S_IMODE(path.stat().st_mode) for path in files}
    home_mode = stat.S_IMODE(hermes_home.stat().st_mode)
    try:
        if what == "file":
            for path in files:
                path.chmod(0o444)
        else:
            hermes_home.chmod(0o555)
        proc = run(hermes_home, "run", "change something", cwd=workspace, plain_user=True)
    finally:
        hermes_home.chmod(home_mode)
        for path, mode in modes.items():
            path.chmod(mode)
    assert_one_sentence(proc, str(db), "is read-only", "check the permissions")
    assert ("user", "change something") not in stored(hermes_home)


def test_a_corrupt_database_is_one_sentence_naming_the_file(hermes_home, serve, workspace):
    serve([{"text": "never asked"}])
    db = hermes_home / "state.db"
    db.write_bytes(b"this is not a database, it is garbage " * 300)
    proc = run(hermes_home, "run", "hello", cwd=workspace)
    assert_one_sentence(proc, str(db), "is corrupt or not a SQLite database", "move it aside")
    proc = run(hermes_home, "sessions", "list")
    assert_one_sentence(proc, str(db), "is corrupt")


def damage_search_index(db: Path, how: str = "blocks") -> None:
    """Damage the FTS5 index in its shadow tables: random bytes over its blocks, or its
    structure record gone (then every use of the index fails, a message insert too)."""
    statement = {
        "blocks": "UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10",
        "structure": "DELETE FROM messages_fts_data WHERE id = 10",
    }[how]
    conn = sqlite3.connect(db)
    conn.execute(statement)
    conn.commit()
    conn.close()


def test_a_damaged_search_index_is_reported_as_such_and_the_rest_works(
    hermes_home, serve, workspace
):
    serve([{"text": "the first answer"}, {"text": "the second answer"}])
    make_database(hermes_home, workspace)
    db = hermes_home / "state.db"
    damage_search_index(db)
    proc = run(hermes_home, "sessions", "search", "answer")
    assert_one_sentence(proc, "the search index of the session database", str(db), "reindex")
    proc = run(hermes_home, "sessions", "list")
    assert proc.returncode == 0 and "earlier task" in proc.stdout, "listing still works"
    proc = run(hermes_home, "sessions", "reindex")
    assert proc.returncode == 0, proc.stderr
    assert "search index rebuilt" in proc.stdout
    proc = run(hermes_home, "sessions", "search", "first", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["snippet"] for line in proc.stdout.splitlines()] == [
        "the [first] answer"
    ]


@pytest.mark.parametrize("how", ["blocks", "structure"])
def test_a_turn_on_a_damaged_search_index_is_saved(hermes_home, serve, workspace, how):
    serve([{"text": "the first answer"}, {"text": "the second answer"}])
    make_database(hermes_home, workspace)
    damage_search_index(hermes_home / "state.db", how)
    proc = run(hermes_home, "run", "another task", cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.splitlines()[0]], proc.stderr
    assert proc.stderr.startswith("[session "), "no error, no notice: just the session id"
    answer = [("user", "another task"), ("assistant", "the second answer")]
    assert stored(hermes_home)[-2:] == answer
    if how == "structure":
        # The insert could not go on without the index: it was rebuilt, so search works.
        proc = run(hermes_home, "sessions", "search", "answer", "--json")
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stdout.splitlines()) == 2


def test_log_records_go_to_a_private_file_and_never_to_the_terminal(hermes_home, serve, workspace):
    serve([{"text": "never asked"}], lock_timeout_seconds=0.2)
    run(hermes_home, "sessions", "list")
    with held_write_lock(hermes_home / "state.db"):
        # A process of its own: a record on its real stderr is what this test is about.
        proc = subprocess.run(
            cli("run", "hello"),
            capture_output=True,
            text=True,
            env=env_for(hermes_home),
            cwd=workspace,
            timeout=60,
        )
    assert not [line for line in proc.stderr.splitlines() if any(w in line for w in LOG_LINES)]
    logs = hermes_home / "logs"
    log = logs / "hermes-tui.log"
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "WARNING hermes_tui.agent" in log.read_text()
