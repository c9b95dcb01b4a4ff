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

JUST_FAILS = """
    def test_fails():
        assert False, "deliberate failure"
"""

LEAKS_A_THREAD = """
    import threading

    def test_leaks_a_thread_that_never_ends():
        threading.Thread(target=threading.Event().wait, name="leaked-forever").start()
        assert False, "deliberate failure"
"""


def run_pytest(tmp_path: Path, source: str, *plugins: str) -> tuple[int, str, float]:
    test = tmp_path / "test_deliberate.py"
    test.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS_DIR)])}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "asyncio"]
    for plugin in plugins:
        args += ["-p", plugin]
    started = time.monotonic()
    done = subprocess.run(
        [*args, "--rootdir", str(tmp_path), "-o", "asyncio_mode=auto", str(test)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,  # a hang ends here; the bound below is what a test sees
    )
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def assert_exits_promptly(tmp_path: Path, seconds: float, *plugins: str) -> None:
    """`seconds` is within a small factor of a plain failing run's, timed just now.

    A fixed bound failed on a loaded machine (a bare pytest start took 20 s there), so the
    run is compared with a plain failing test started the same way at the same moment.
    """
    baseline_dir = tmp_path / "baseline"
    baseline_dir.mkdir()
    _, _, baseline = run_pytest(baseline_dir, JUST_FAILS, *plugins)
    assert seconds < 2 * baseline + 5, (
        f"pytest took {seconds:.1f} s to exit after a failure"
        f" (a plain failing run: {baseline:.1f} s)"
    )


def test_a_test_failing_with_an_open_database_does_not_keep_pytest_alive(tmp_path):
    # No guard plugin here: the store's own threads must not hold the interpreter open.
    status, output, seconds = run_pytest(tmp_path, FAILS_WITH_AN_OPEN_DATABASE)
    assert status == 1, output
    assert "deliberate failure before db.close()" in output
    assert_exits_promptly(tmp_path, seconds)


def test_the_exit_guard_ends_a_run_that_leaked_a_thread(tmp_path):
    status, output, seconds = run_pytest(tmp_path, LEAKS_A_THREAD, "exit_guard")
    assert status == 1, output
    assert "non-daemon threads still running at exit: leaked-forever" in output
    assert_exits_promptly(tmp_path, seconds, "exit_guard")
