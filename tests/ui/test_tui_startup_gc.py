"""The collector waits while the full-screen app starts (SPEC Z2, `bench startup`): the
command line pauses it, no collection runs before the first frame, and the app resumes it
once it is up (hermes_tui/startup_gc.py)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

from hermes_tui import startup_gc
from hermes_tui.app import BENCH_FIRST_FRAME_ENV

# The command line's own path to the full-screen app, headless, up to its first frame (the
# app exits right after painting it). Collections are counted until the app resumes them.
FIRST_FRAME = """
import functools, gc, json
from hermes_tui import cli, startup_gc
from hermes_tui.app import HermesApp

collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
seen = {}
release = startup_gc.release

def counted_release():
    seen.setdefault("before_release", len(collections))
    release()
    # What a full collection after the pause would scan (every generation; frozen ones aside).
    seen.setdefault("scanned_next", len(gc.get_objects()))

startup_gc.release = counted_release
HermesApp.run = functools.partialmethod(HermesApp.run, headless=True)
code = cli.main(["--demo"])
print(json.dumps({"code": code, "enabled": gc.isenabled(), **seen}))
"""


def test_no_collection_runs_before_the_first_frame_and_the_collector_resumes(tmp_path):
    """Z2: start-up's objects nearly all live as long as the app, so the collector pauses
    from the command line until the app is up; it is running again when the app ends."""
    env = {**os.environ, BENCH_FIRST_FRAME_ENV: "1", "HERMES_TUI_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    scanned_next = seen.pop("scanned_next")
    assert seen == {"code": 0, "enabled": True, "before_release": 0}
    # This app ends at its first frame, before it came up: start-up's objects (about 60,000)
    # are frozen, not left for a collection to scan on the way out (Z2).
    assert scanned_next < 10_000


async def test_the_app_resumes_a_paused_collector_once_it_is_up(make_app):
    """Z2: the pause ends when the store and the agent are up, never later (a collector
    left paused would let a long session's garbage grow without bound)."""
    startup_gc.hold()
    try:
        assert not gc.isenabled()
        app = make_app()
        async with app.run_test(size=(80, 24)):
            await app.ready()
            assert gc.isenabled()
    finally:
        startup_gc.release()
        gc.enable()


def test_a_collector_paused_by_someone_else_stays_paused():
    """Z2: the app resumes only its own pause (a caller that paused the collector keeps it)."""
    gc.disable()
    try:
        startup_gc.hold()
        startup_gc.release()
        assert not gc.isenabled()
    finally:
        gc.enable()
