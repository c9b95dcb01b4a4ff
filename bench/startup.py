"""Time to the first frame: hermes-tui against a bare Textual app with one Static.

Both run as fresh processes, alternately, under the same headless driver; each exits itself
right after its first paint (hermes-tui through HERMES_TUI_BENCH_FIRST_FRAME).
Prints `startup.ratio`: the median over pairs of (hermes-tui / the bare app run just before
it); target <= 1.5. The ratio of the two medians is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bench._common import figure, isolated_home, median

BARE_APP = """
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("hello")

    def on_mount(self):
        self.call_after_refresh(self.exit)

Bare().run(headless=True)
"""

HERMES_APP = """
from hermes_tui import startup_gc

startup_gc.hold()  # as the command line does before it starts the full-screen app
from agent.config import load_config
from hermes_tui.app import HermesApp

HermesApp(load_config(demo=True)).run(headless=True)
"""


def first_frame_seconds(code: str, env: dict[str, str]) -> float:
    """Wall time of one process that starts an app and exits after its first frame."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    """Run both apps `--runs` times each, alternately, and print the paired ratio."""
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
    first_frame_seconds(BARE_APP, env)
    first_frame_seconds(HERMES_APP, env)
    bare: list[float] = []
    hermes: list[float] = []
    for _ in range(args.runs):
        bare.append(first_frame_seconds(BARE_APP, env))
        hermes.append(first_frame_seconds(HERMES_APP, env))
    figure("startup.bare_ms", median(bare) * 1000)
    figure("startup.hermes_ms", median(hermes) * 1000)
    figure("startup.ratio_of_medians", median(hermes) / median(bare))
    # A process start on this shared machine swings by half its time from one run to the
    # next; the two runs of a pair share the same spell, so the figure is the paired median.
    figure("startup.ratio", median([h / b for h, b in zip(hermes, bare, strict=True)]))
    return 0
