"""`hermes-tui ...` run inside the test process: the CLI's own `main`, with its streams captured.

Starting the app as a process costs 1-3 s of CPU (an interpreter, our modules, the SDKs).
A test about what a run says, exits with and stores, and not about the process boundary
(signals, pipes, the interpreter's own exit), calls `run_cli_in_process` instead. The call
gets what the process would have had: its own environment and working folder, stdin at
/dev/null (what pytest-xdist gives a subprocess), fresh stdout and stderr. The process-wide
logging setup `main` installs (a root handler, levels, the warnings and thread hooks) is
taken back afterwards, so the next test starts as it would have.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path


def run_cli_in_process(
    args: list[str], *, env: Mapping[str, str], cwd: Path | str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `hermes-tui *args` through `hermes_tui.cli.main`; a CompletedProcess of its result."""
    from hermes_tui.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _process_state(env, cwd), open(os.devnull, "rb") as devnull:
        stdin = io.TextIOWrapper(devnull)
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's usage errors and --version exit this way
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
            stdin.detach()
    return subprocess.CompletedProcess(
        ["hermes-tui", *args], code, stdout=out.getvalue(), stderr=err.getvalue()
    )


@contextlib.contextmanager
def _process_state(env: Mapping[str, str], cwd: Path | str | None) -> Iterator[None]:
    """The environment, working folder and logging of a process of its own, for one call."""
    from hermes_tui import logfile

    environ, here = dict(os.environ), os.getcwd()
    root, ours = logging.getLogger(), logging.getLogger("hermes_tui")
    handlers, levels = list(root.handlers), (root.level, ours.level)
    raise_exceptions, excepthook = logging.raiseExceptions, threading.excepthook
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        logfile._installed = None  # the log file of this run is closed: the next opens its own
        root.setLevel(levels[0])
        ours.setLevel(levels[1])
        logging.captureWarnings(False)
        logging.raiseExceptions, threading.excepthook = raise_exceptions, excepthook
