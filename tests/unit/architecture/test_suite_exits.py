"""A failing test can never hang the suite: pytest exits within seconds of the failure."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[2]
REPO = TESTS_DIR.parent

FAILS_WITH_AN_OPEN_DATABASE = """
    import asyncio
    from storage import SessionDB

    async def test_fails_before_close(tmp_path):
        db = await SessionDB.open(tmp_path / "state.db")
        sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
        db.queue_token_counts(sid, model="m", provider="p", input_tokens=1)
        assert False, "deliberate failure before db.close()"
"""

LEAKS_A_THREAD = """
    import threading

    def test_leaks_a_thread_that_never_ends():
        threading.Thread(target=threading.Event().wait, name="leaked-forever").start()
        assert False, "deliberate failure"
"""


SESSION_END_STAMP = """
    import atexit
    import time
    from pathlib import Path

    PHASES = Path(__file__).with_name("phases")

    def stamp(phase):
        with PHASES.open("a") as out:
            out.write(f"{phase} {time.monotonic()!r}\\n")

    # Registered before anything the test imports: atexit runs last-in first-out, so this
    # runs after every exit handler the code under test registers (the token drain's).
    atexit.register(stamp, "exit handlers done")

    def pytest_sessionfinish(session, exitstatus):
        # Last thing pytest does before it reports and the interpreter shuts down.
        Path(__file__).with_name("ended").write_text(repr(time.monotonic()))

    def pytest_unconfigure(config):
        stamp("unconfigured")
"""
EXIT_SECONDS = 60.0
"""How long after its session ended pytest may take to exit. A hang never exits (the run's
own timeout ends it), so the bound only has to tell a hang from a slow exit: the exit
guard's grace is 3 s and the token drain's wait 6 s, but on a loaded CI disk one exit took
34 s (an fsync behind other writers), which is slow, not stuck."""


def run_pytest(tmp_path: Path, source: str, *plugins: str) -> tuple[int, str, float]:
    """Run `source` as a test file in a fresh pytest: its status, its output, and the seconds
    from the end of its session to the end of the process (start-up is not counted: on a
    loaded machine a bare pytest start took 20 s, which says nothing about the exit)."""
    test = tmp_path / "test_deliberate.py"
    test.write_text(textwrap.dedent(source))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(SESSION_END_STAMP))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS_DIR)])}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "asyncio"]
    for plugin in plugins:
        args += ["-p", plugin]
    try:
        done = subprocess.run(
            [*args, "--rootdir", str(tmp_path), "-o", "asyncio_mode=auto", str(test)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,  # a hang ends here, as a failure
        )
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"pytest never exited after its session: {hung.stdout!r}") from None
    exited = time.monotonic()
    ended = float((tmp_path / "ended").read_text())
    return done.returncode, done.stdout + done.stderr + phases(tmp_path, ended), exited - ended


def phases(tmp_path: Path, ended: float) -> str:
    """When each stage of the exit was reached, in seconds after the session ended."""
    stamps = tmp_path / "phases"
    lines = stamps.read_text().splitlines() if stamps.exists() else []
    timed = [line.rpartition(" ") for line in lines]
    return "".join(f"\n{name}: +{float(at) - ended:.1f} s" for name, _, at in timed)


def assert_exits_promptly(seconds: float, output: str) -> None:
    """pytest exited within EXIT_SECONDS of its session's end (the output says where it was)."""
    assert seconds < EXIT_SECONDS, f"pytest took {seconds:.1f} s to exit: {output}"


def test_a_test_failing_with_an_open_database_does_not_keep_pytest_alive(tmp_path):
    # No guard plugin here: the store's own threads must not hold the interpreter open.
    status, output, seconds = run_pytest(tmp_path, FAILS_WITH_AN_OPEN_DATABASE)
    assert status == 1, output
    assert "deliberate failure before db.close()" in output
    assert_exits_promptly(seconds, output)


def test_the_exit_guard_ends_a_run_that_leaked_a_thread(tmp_path):
    status, output, seconds = run_pytest(tmp_path, LEAKS_A_THREAD, "exit_guard")
    assert status == 1, output
    assert "non-daemon threads still running at exit: leaked-forever" in output
    assert_exits_promptly(seconds, output)
