"""Time to the first frame: hermes-tui against a bare Textual app with one Static.

Both run as fresh processes, alternately, under the same headless driver; each exits itself
right after its first paint (hermes-tui through HERMES_TUI_BENCH_FIRST_FRAME).
Prints `startup.ratio`: the median over pairs of (hermes-tui / the bare app run just before
it), to process exit; target <= 1.2. Beside it, the same ratio to the first frame itself, in
wall time and in CPU time (each process reports both when it paints): on a shared machine
the CPU figure is the steadier one. The ratio of the two medians is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from bench._common import figure, isolated_home, median

# Each app prints, once, at its first frame: the wall time since the bench started it and
# the CPU time the process has used.
FIRST_FRAME_REPORT = """
import json, os, sys, time
_reported = []
def _first_frame():
    if not _reported:
        _reported.append(True)
        wall = time.time() - float(os.environ["BENCH_STARTED_AT"])
        print(json.dumps({"wall": wall, "cpu": time.process_time()}), flush=True)
"""

BARE_APP = (
    FIRST_FRAME_REPORT
    + """
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("hello")

    def on_mount(self):
        self.call_after_refresh(self.painted)

    def painted(self):
        _first_frame()
        self.exit()

Bare().run(headless=True)
"""
)

HERMES_APP = (
    FIRST_FRAME_REPORT
    + """
from hermes_tui import startup_gc

startup_gc.hold()  # as the command line does before it starts the full-screen app
from agent.config import load_config
from hermes_tui.app import HermesApp

_exit = HermesApp.exit

def _exit_after_first_frame(self, *args, **kwargs):
    _first_frame()  # HERMES_TUI_BENCH_FIRST_FRAME exits right after the first frame
    _exit(self, *args, **kwargs)

HermesApp.exit = _exit_after_first_frame
HermesApp(load_config(demo=True)).run(headless=True)
"""
)


@dataclass(frozen=True)
class Run:
    """One process: wall time to its exit, and wall and CPU time to its first frame."""

    to_exit: float
    first_frame: float
    first_frame_cpu: float


def run_once(code: str, env: dict[str, str]) -> Run:
    """Start one app process that exits after its first frame, and time it."""
    started = time.perf_counter()
    env = {**env, "BENCH_STARTED_AT": repr(time.time())}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True
    )
    to_exit = time.perf_counter() - started
    painted = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(to_exit, painted["wall"], painted["cpu"])


def paired_ratio(ours: list[float], bare: list[float]) -> float:
    """The median over pairs of (ours / the bare run just before it)."""
    return median([o / b for o, b in zip(ours, bare, strict=True)])


def main(argv: list[str]) -> int:
    """Run both apps `--runs` times each, alternately, and print the paired ratios."""
    parser = argparse.ArgumentParser(prog="bench startup")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    home = isolated_home()
    env = {**os.environ, "HERMES_TUI_BENCH_FIRST_FRAME": "1"}
    # Both apps start from cached bytecode, as they do on a user's machine (pip compiles an
    # installed package; an editable one writes __pycache__ on first run). A shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise make every run recompile our modules from source.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")  # keeps the source tree clean
    # One warm-up each fills the OS file cache and the bytecode caches.
    run_once(BARE_APP, env)
    run_once(HERMES_APP, env)
    bare: list[Run] = []
    hermes: list[Run] = []
    for _ in range(args.runs):
        bare.append(run_once(BARE_APP, env))
        hermes.append(run_once(HERMES_APP, env))
    bare_exit, hermes_exit = [r.to_exit for r in bare], [r.to_exit for r in hermes]
    figure("startup.bare_ms", median(bare_exit) * 1000)
    figure("startup.hermes_ms", median(hermes_exit) * 1000)
    figure("startup.ratio_of_medians", median(hermes_exit) / median(bare_exit))
    # A process start on this shared machine swings by half its time from one run to the
    # next; the two runs of a pair share the same spell, so the figure is the paired median.
    figure("startup.ratio", paired_ratio(hermes_exit, bare_exit))
    figure(
        "startup.first_frame_ratio",
        paired_ratio([r.first_frame for r in hermes], [r.first_frame for r in bare]),
    )
    figure(
        "startup.first_frame_cpu_ratio",
        paired_ratio([r.first_frame_cpu for r in hermes], [r.first_frame_cpu for r in bare]),
    )
    return 0
