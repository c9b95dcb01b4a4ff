"""Long sessions stay fast (U5): open time and key-to-echo latency, big session vs small.

Headless `HermesApp.run_test()` on the demo model. Prints `longsession.open_ratio` (open and
paint a 5,000-message session / a 50-message one; target <= 2) and
`longsession.keypress_ratio` (composer key-to-echo latency with the big session open / with
an empty transcript; target <= 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from textual import events

from bench._common import figure, isolated_home, median

BIG = 5_000
SMALL = 50


async def seed(db: Any, messages: int) -> str:
    """A session of `messages` rows: user questions, answers with code, tool calls."""
    session = await db.create_session(
        model="demo-model", provider="demo", workspace="/w", title=f"{messages}"
    )
    for i in range(messages):
        if i % 4 == 0:
            row = {"role": "user", "content": f"question {i}: what does step {i} do?"}
        elif i % 4 == 1:
            call = {"id": f"c{i}", "name": "read_file", "arguments": {"path": f"src/m{i}.py"}}
            row = {"role": "assistant", "content": f"Reading m{i}.", "tool_calls": [call]}
        elif i % 4 == 2:
            row = {"role": "tool", "tool_call_id": f"c{i - 1}", "content": "x = 1\n" * 20}
        else:
            row = {
                "role": "assistant",
                "content": f"Step {i} sets **x**:\n\n```python\nx = {i}\nprint(x)\n```\n",
            }
        await db.add_message(session["id"], row)
    return session["id"]


async def open_seconds(app: Any, pilot: Any, session_id: str) -> float:
    """Time to resume a stored session and paint it."""
    await app.run_command("/new")
    await pilot.pause()
    started = time.perf_counter()
    await app.resume_session(session_id)
    await app.screen.wait_for_refresh()
    return time.perf_counter() - started


async def keypress_seconds(app: Any, pilot: Any, presses: int) -> list[float]:
    """Latency from a key event reaching the app to the composer painting it."""
    composer = app.composer
    composer.focus()
    composer.load_text("")
    await pilot.pause()
    latencies = []
    for i in range(presses):
        char = "ab"[i % 2]
        started = time.perf_counter()
        app.post_message(events.Key(char, char))
        while len(composer.text) != i + 1:
            await asyncio.sleep(0)
        await app.screen.wait_for_refresh()
        latencies.append(time.perf_counter() - started)
    return latencies


async def measure(runs: int, presses: int) -> dict[str, float]:
    """Open both sessions alternately `runs` times; then time key presses in each state."""
    from agent.config import load_config
    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes

    app = HermesApp(load_config(demo=True), probes=Probes(cursor_blink=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        big = await seed(app.db, BIG)
        small = await seed(app.db, SMALL)
        await open_seconds(app, pilot, big)  # warm-up: imports, caches
        opened_big, opened_small = [], []
        for _ in range(runs):
            opened_small.append(await open_seconds(app, pilot, small))
            opened_big.append(await open_seconds(app, pilot, big))
        await app.run_command("/new")
        await pilot.pause()
        empty_keys = await keypress_seconds(app, pilot, presses)
        await app.resume_session(big)
        await pilot.pause()
        big_keys = await keypress_seconds(app, pilot, presses)
        mounted = len(app.transcript.children)
    return {
        "open_big": median(opened_big),
        "open_small": median(opened_small),
        "keys_big": median(big_keys),
        "keys_empty": median(empty_keys),
        "mounted": mounted,
    }


def main(argv: list[str]) -> int:
    """Print the open and keypress ratios."""
    parser = argparse.ArgumentParser(prog="bench longsession")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--presses", type=int, default=40)
    args = parser.parse_args(argv)
    isolated_home()
    result = asyncio.run(measure(args.runs, args.presses))
    figure("longsession.open_big_ms", result["open_big"] * 1000)
    figure("longsession.open_small_ms", result["open_small"] * 1000)
    figure("longsession.mounted_widgets", int(result["mounted"]))
    figure("longsession.open_ratio", result["open_big"] / result["open_small"])
    figure("longsession.keypress_big_ms", result["keys_big"] * 1000)
    figure("longsession.keypress_empty_ms", result["keys_empty"] * 1000)
    figure("longsession.keypress_ratio", result["keys_big"] / result["keys_empty"])
    return 0
