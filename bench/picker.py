"""The `@` picker stays instant on a big tree (P2): index time and key-to-repaint latency.

A generated tree of 100,000 files (the benchmark writes it under a temporary folder).
Prints `picker.index_ms_100k` (listing it on the index's own thread, the walk with the
gitignore rules; `picker.index_git_ms_100k` the same tree as an untracked git work tree),
`picker.keystroke_p95_ms` (a key typed into the composer with the picker open over that
tree, to the repaint that shows it; target <= 16 ms, a frame), `picker.results_p95_ms` (a
key to the repaint that shows the picker's new ranking, which comes from the search
thread), and `picker.keystroke_ratio` (the picker's keystroke p95 / the same composer's p95
with no picker open, in the same run; target <= 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from textual import events

from bench._common import figure, isolated_home, median, p95

FILES = 100_000
WORDS = (
    "src", "lib", "core", "utils", "tests", "agent", "tools", "widgets", "components", "api",
    "models", "views", "handlers", "config", "docs", "internal", "server", "client", "ui",
)  # fmt: skip
QUERIES = ("comp/widg", "handlers", "apiview", "tests/mod", "srcutil")


def generate(root: Path, files: int = FILES) -> Path:
    """A deterministic tree of `files` files, three to five folders deep."""
    rng = random.Random(18)
    made = 0
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("*.pyc\nbuild/\n")
    while made < files:
        depth = rng.randint(2, 4)
        folder = root.joinpath(*(f"{rng.choice(WORDS)}{rng.randint(0, 9)}" for _ in range(depth)))
        folder.mkdir(parents=True, exist_ok=True)
        for _ in range(min(rng.randint(5, 40), files - made)):
            stem = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
            (folder / f"{stem}.{rng.choice(('py', 'ts', 'md', 'json'))}").write_bytes(b"")
            made += 1
    return root


def index_seconds(root: Path) -> tuple[float, int]:
    """Listing `root` on the index's own thread, as the app does (median of three)."""
    from hermes_tui.completion.index import FileIndex

    times, count = [], 0
    for _ in range(3):
        index = FileIndex(root)
        started = time.perf_counter()
        index.refresh()
        index.wait(300)
        times.append(time.perf_counter() - started)
        count = len(index.paths)
    return median(times), count


async def key_latencies(app: Any, pilot: Any, text: str) -> tuple[list[float], list[float]]:
    """(key to the composer's repaint, key to the picker's repaint of that query) per key."""
    composer = app.composer
    completion = app.completion
    keys, results = [], []
    for char in text:
        before = len(composer.text)
        started = time.perf_counter()
        app.post_message(events.Key(char, char))
        while len(composer.text) == before:
            await asyncio.sleep(0)
        await app.screen.wait_for_refresh()
        keys.append(time.perf_counter() - started)
        if completion.picking:
            query = completion.token.query
            while completion.paths_for != query:
                await asyncio.sleep(0)
            await app.screen.wait_for_refresh()
            results.append(time.perf_counter() - started)
    return keys, results


async def measure(root: Path, rounds: int) -> dict[str, list[float]]:
    """Type plain text and picker queries alternately in one app over the tree."""
    from agent.config import load_config
    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes

    app = HermesApp(load_config(demo=True), workspace=root, probes=Probes(cursor_blink=False))
    plain, picker, ranked = [], [], []
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        app.completion.index.wait(300)
        await key_latencies(app, pilot, "@warm up")  # imports, the ranking table
        for round_ in range(rounds):
            for query in QUERIES:
                app.composer.load_text("")
                await pilot.pause()
                keys, _ = await key_latencies(app, pilot, "plain words " + query)
                plain.extend(keys)
                app.composer.load_text("")
                await pilot.pause()
                await key_latencies(app, pilot, "@")
                keys, results = await key_latencies(app, pilot, query)
                picker.extend(keys)
                ranked.extend(results)
            if round_ == 0:
                app.completion.index.refresh(force=True)  # a rebuild while typing, once
    return {"plain": plain, "picker": picker, "ranked": ranked}


def main(argv: list[str]) -> int:
    """Print the index time and the keystroke figures."""
    parser = argparse.ArgumentParser(prog="bench picker")
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    isolated_home()
    work = Path(tempfile.mkdtemp(prefix="hermes-picker-"))
    try:
        root = generate(work / "tree", args.files)
        walked, count = index_seconds(root)
        figure("picker.indexed_paths", count)
        figure("picker.index_ms_100k", walked * 1000)
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            with_git, _ = index_seconds(root)
            figure("picker.index_git_ms_100k", with_git * 1000)
            shutil.rmtree(root / ".git")
        result = asyncio.run(measure(root, args.rounds))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain, picker = p95(result["plain"]), p95(result["picker"])
    figure("picker.composer_p95_ms", plain * 1000)
    figure("picker.keystroke_p95_ms", picker * 1000)
    figure("picker.results_p95_ms", p95(result["ranked"]) * 1000)
    figure("picker.keystroke_ratio", picker / plain)
    return 0
