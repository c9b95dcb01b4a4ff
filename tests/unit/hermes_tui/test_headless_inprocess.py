"""The in-process CLI runner gives `main` a process's state and takes it back afterwards.

A headless test that runs `main` in the test process (tests/headless_inprocess.py) must
leave the next test as it found it: main installs a root log handler, log levels, the
warnings capture and a thread hook, and the run gets an environment and folder of its own.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings

from headless_inprocess import run_cli_in_process


def test_main_runs_with_its_own_state_and_leaves_the_process_as_it_was(tmp_path, hermes_home):
    root = logging.getLogger()
    before = (
        list(root.handlers),
        root.level,
        logging.getLogger("hermes_tui").level,
        threading.excepthook,
        warnings.showwarning,
        logging.raiseExceptions,
        os.getcwd(),
        dict(os.environ),
    )
    env = {**os.environ, "HERMES_TUI_HOME": str(hermes_home), "ONLY_IN_THE_RUN": "1"}
    proc = run_cli_in_process(["run"], env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "Give a task" in proc.stderr and proc.stdout == ""
    assert (hermes_home / "logs" / "hermes-tui.log").exists()  # main's own log setup ran
    after = (
        list(root.handlers),
        root.level,
        logging.getLogger("hermes_tui").level,
        threading.excepthook,
        warnings.showwarning,
        logging.raiseExceptions,
        os.getcwd(),
        dict(os.environ),
    )
    assert after == before
