"""Long sessions stay fast (U5, Z2): opening, sending and typing cost what the screen costs.

Headless `HermesApp.run_test()` on the demo model, every figure a ratio against an empty
session in the same run:

- `longsession.paint_50k_ratio`, `longsession.paint_1m_ratio`: resume and paint the last
  screen of a session of 300-line Markdown answers with code blocks (2 answers, ~50 KB; 40
  answers, ~1 MB) / of an empty session; target <= 1.5.
- `longsession.built_50k_ratio`, `longsession.built_1m_ratio`: the same until the last screen
  is built as Markdown (the first paint may show its plain text). Each side's `_ms` beside
  them, and `paint_<side>_cpu_ratio`, `built_<side>_cpu_ratio`: the same in the process's
  CPU time (steadier on a loaded machine). `--only paint` prints these alone (`--runs` opens
  of each session, median).
- `longsession.enter_<side>_ratio`: Enter to the user's bubble on screen with a session of
  long answers open (`50k`, `1m`; `--turns-side` adds the 1,000-turn session) / an empty one;
  `longsession.key_<side>_ratio`: composer key to echo, the same sides; target <= 1.2.
  The sides alternate round by round (`--rounds`), each a few samples a round; each ratio
  is of the medians, with a 95 % interval from resampled rounds and `met`, `missed` or
  `not called` (the interval straddles the target). `_cpu_ratio`: the same in the UI
  thread's CPU time (steadier on a loaded machine). `enter_ratio`, `key_ratio`: the worst
  side's. Each side's `_ms` figure gives its median, quartiles and sample count.
  `--input-only` times and prints only these Enter and key figures (quicker to iterate).
- `longsession.rss_ratio`: resident memory of a fresh app process with the 1,000-turn session
  open / with an empty one; target <= 1.5.
- `longsession.idle_cpu_pct`: percent of a core that process uses while idle with it open
  (measured over `--idle` seconds, a second after the paint); target < 1.
- `longsession.scroll_1m_first_ms`, `longsession.scroll_1m_last_ms`: PageUp-sized scrolls up
  from the bottom of the 1 MB session, each until the Markdown near the view is built
  (median of the first and of the last SCROLL_SAMPLE of `--pages`, leaving out the scrolls
  that paged in older rows); `scroll_1m_ratio` is
  last / first, about 1 when scrolling costs what the screen shows (it grew with the
  distance scrolled while every chunk built stayed mounted); `scroll_1m_cpu_ratio` the same
  in CPU time, `scroll_1m_blocks` the Markdown blocks mounted after the scrolls. `--only
  scroll` prints these.
- `longsession.open_ratio`, `longsession.keypress_ratio`: the older figures, a 5,000-message
  session of short rows / a 50-message one (target <= 2), and key-to-echo with it open / an
  empty transcript (target <= 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual import events
from textual.errors import NoWidget

from bench._common import figure, isolated_home, median
from bench._long_answers import seed_empty, seed_turns
from bench._spread import Ratio, Spread, flat, paired_ratio

BIG = 5_000
SMALL = 50
TURNS = 1_000
ROUNDS = 6
"""Default rounds of the Enter and key samples (each round opens every side once)."""
INPUT_TARGET = 1.2
"""Enter-to-bubble and key-to-echo, a long session / an empty one (Z2)."""
PAINT_DEADLINE = 600.0
"""Seconds a paint or a bubble may take before the bench gives up on it."""
SCROLL_PAGES = 60
"""Screens scrolled up from the bottom of the 1 MB session (`--pages`)."""
SCROLL_SAMPLE = 10
"""Scrolls at each end of those whose median is a figure."""
OPEN_POLL = 0.001
"""Seconds between looks while an open is timed (see `until`)."""


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


async def until(condition: Any, what: str, poll: float = 0.0) -> None:
    """Yield to the app until `condition()` holds (bounded: a stuck app fails the bench).

    `poll` is the wait between looks: 0 (the next turn of the loop) where a few
    milliseconds are the figure (a key's echo), a millisecond where it is hundreds of them
    (an open), so the loop does not spin and take CPU from the app it measures (the CPU
    ratios would partly follow wall time)."""
    deadline = time.monotonic() + PAINT_DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench longsession: {what} took over {PAINT_DEADLINE:.0f} s")
        await asyncio.sleep(poll)


def last_row_shown(app: Any) -> bool:
    """The newest row is mounted with its content (built Markdown, or its plain text)."""
    children = app.transcript.children
    if not children:
        return True
    last = children[-1]
    return not hasattr(last, "source") or bool(last.children) or not last.source


def settled(app: Any) -> bool:
    """Nothing near the view waits to be built as Markdown (always so without lazy answers)."""
    return not getattr(app.transcript, "filling", False)


async def open_seconds(app: Any, pilot: Any, session_id: str) -> float:
    """Time to resume a stored session and paint its last screen."""
    await app.run_command("/new")
    await pilot.pause()
    started, cpu = time.perf_counter(), time.process_time()
    await app.resume_session(session_id)
    await until(lambda: last_row_shown(app), "the last screen", OPEN_POLL)
    await app.screen.wait_for_refresh()
    painted = time.perf_counter() - started
    PAINTED_CPU.append(time.process_time() - cpu)
    await until(lambda: settled(app), "the Markdown near the view", OPEN_POLL)
    await app.screen.wait_for_refresh()
    SETTLED.append(time.perf_counter() - started)
    SETTLED_CPU.append(time.process_time() - cpu)
    return painted


SETTLED: list[float] = []
"""Each open's time to its last screen built as Markdown (the first paint may be plain)."""
PAINTED_CPU: list[float] = []
SETTLED_CPU: list[float] = []
"""The same opens in the process's CPU time (steadier on a loaded machine; the bench's own
polling loop counts in it alike on every side)."""


Timings = tuple[list[float], list[float]]
"""Wall seconds and UI-thread CPU seconds, one of each per sample."""


async def keypress_seconds(app: Any, pilot: Any, presses: int) -> Timings:
    """Latency from a key event reaching the app to the composer painting it."""
    composer = app.composer
    composer.focus()
    composer.load_text("")
    await pilot.pause()
    walls, cpus = [], []
    for i in range(presses):
        char = "ab"[i % 2]
        started, cpu = time.perf_counter(), time.thread_time()
        app.post_message(events.Key(char, char))
        await until(lambda n=i + 1: len(composer.text) == n, "the key's echo")
        await app.screen.wait_for_refresh()
        walls.append(time.perf_counter() - started)
        cpus.append(time.thread_time() - cpu)
    composer.load_text("")
    return walls, cpus


def on_screen(app: Any, widget: Any) -> bool:
    """True once a frame shows `widget` in the transcript: the screen's last layout puts it
    under a cell of the view (a layout draws its frame before anything else runs).

    Mounted is not shown: the first layout after Enter may place the bubble below the view
    (the scroll to the end comes a frame later), and a refresh awaited then can be one that
    had no layout to do at all (the bubble not placed yet)."""
    view = app.transcript.region
    x = view.x + view.width // 2
    for y in range(view.bottom - 1, view.y - 1, -1):
        try:
            found, _ = app.screen.get_widget_at(x, y)
        except NoWidget:  # nothing under that cell
            continue
        if found is widget:
            return True
    return False


async def enter_seconds(app: Any, pilot: Any, sends: int) -> Timings:
    """Latency from Enter to the user's bubble on screen (`on_screen`); each turn is stopped
    and awaited."""
    from hermes_tui.widgets.messages import UserMessage

    composer = app.composer
    walls, cpus = [], []
    for i in range(sends):
        text = f"bench ping {i} {time.monotonic_ns()}"
        composer.focus()
        composer.load_text(text)
        await pilot.pause()
        started, cpu = time.perf_counter(), time.thread_time()
        app.post_message(events.Key("enter", "\r"))

        def bubbled(text: str = text) -> bool:
            last = app.transcript.last_user
            if not (isinstance(last, UserMessage) and last.text == text and last.is_attached):
                return False
            return on_screen(app, last)

        await until(bubbled, "the user's bubble")
        walls.append(time.perf_counter() - started)
        cpus.append(time.thread_time() - cpu)
        app.turns.stop()
        await app.wait_for_turn(timeout=PAINT_DEADLINE)
    return walls, cpus


@dataclass
class InputRounds:
    """Enter and key timings per side (a session kind), one list of samples per round."""

    enter: dict[str, list[list[float]]] = field(default_factory=dict)
    enter_cpu: dict[str, list[list[float]]] = field(default_factory=dict)
    key: dict[str, list[list[float]]] = field(default_factory=dict)
    key_cpu: dict[str, list[list[float]]] = field(default_factory=dict)

    def add(self, side: str, enter: Timings, key: Timings) -> None:
        """One round of `side`'s samples."""
        for store, samples in (
            (self.enter, enter[0]),
            (self.enter_cpu, enter[1]),
            (self.key, key[0]),
            (self.key_cpu, key[1]),
        ):
            store.setdefault(side, []).append(samples)


async def input_rounds(
    app: Any, pilot: Any, sessions: dict[str, str], rounds: int, sends: int, presses: int
) -> InputRounds:
    """Enter and key timings with each session open in turn, round after round.

    The sides alternate within every round, in an order rotated each round, so a burst of
    load on a shared machine lands on all of them alike. The empty side is a fresh empty
    session each round (its own sends would otherwise fill it).
    """
    found = InputRounds()
    await open_seconds(app, pilot, await seed_empty(app.db))
    await enter_seconds(app, pilot, sends)  # warm-up: the first turn's imports and caches
    await keypress_seconds(app, pilot, presses)
    names = ["empty", *sessions]
    for index in range(rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            session = sessions[name] if name != "empty" else await seed_empty(app.db)
            await open_seconds(app, pilot, session)
            enter = await enter_seconds(app, pilot, sends)
            found.add(name, enter, await keypress_seconds(app, pilot, presses))
    return found


async def scroll_seconds(app: Any, pilot: Any, session_id: str, pages: int) -> list[float]:
    """Open `session_id`, then time each of `pages` scrolls up a screen until the Markdown
    near the view is built; the scrolls that paged in older rows are left out (they parse
    and mount a page of rows: a cost of their own, not the scroll's)."""
    from textual.widgets.markdown import MarkdownBlock  # here: the child's RSS is the app's

    await open_seconds(app, pilot, session_id)
    transcript = app.transcript
    times: list[float] = []
    for _ in range(pages):
        first_row = transcript.children[0] if transcript.children else None
        started, cpu = time.perf_counter(), time.process_time()
        transcript.scroll_relative(y=-transcript.region.height, animate=False, immediate=True)
        await app.screen.wait_for_refresh()
        await until(lambda: settled(app) and not transcript.paging, "a scroll's build", OPEN_POLL)
        await app.screen.wait_for_refresh()
        if transcript.children and transcript.children[0] is not first_row:
            continue  # this scroll paged in older rows as well: not the scroll's own cost
        times.append(time.perf_counter() - started)
        SCROLL_CPU.append(time.process_time() - cpu)
    SCROLL_BLOCKS.append(len(transcript.query(MarkdownBlock)))
    return times


SCROLL_CPU: list[float] = []
"""Each timed scroll in the process's CPU time."""
SCROLL_BLOCKS: list[int] = []
"""Markdown blocks mounted after the scrolls."""


def scroll_figures(times: list[float]) -> None:
    """The first and last scrolls' medians in ms, last / first (wall and CPU), and the
    Markdown blocks left mounted."""
    first = median(times[:SCROLL_SAMPLE])
    last = median(times[-SCROLL_SAMPLE:])
    figure("longsession.scroll_1m_first_ms", first * 1000)
    figure("longsession.scroll_1m_last_ms", last * 1000)
    figure("longsession.scroll_1m_ratio", last / first)
    cpu_ratio = median(SCROLL_CPU[-SCROLL_SAMPLE:]) / median(SCROLL_CPU[:SCROLL_SAMPLE])
    figure("longsession.scroll_1m_cpu_ratio", cpu_ratio)
    figure("longsession.scroll_1m_blocks", SCROLL_BLOCKS[-1])


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Seed the sessions, then time opens, Enter and keys against an empty session."""
    from agent.config import load_config
    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes

    app = HermesApp(load_config(demo=True), probes=Probes(cursor_blink=False))
    found: dict[str, Any] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        empty = await seed_empty(app.db)
        long_50k = await seed_turns(app.db, "50k", 2, long_every=1)
        long_1m = await seed_turns(app.db, "1m", 40, long_every=1)
        turns = await seed_turns(app.db, "1000 turns", TURNS, long_every=20)
        big = await seed(app.db, BIG)
        small = await seed(app.db, SMALL)
        await app.db.flush()
        found["sessions"] = {"empty": empty, "turns": turns}
        sides = {"50k": long_50k, "1m": long_1m}
        if args.turns_side:
            sides["1000_turns"] = turns
        if args.only == "scroll":
            found["scroll"] = await scroll_seconds(app, pilot, long_1m, args.pages)
            return found
        if args.input_only:
            found["input"] = await input_rounds(
                app, pilot, sides, args.rounds, args.sends, args.presses
            )
            return found
        await open_seconds(app, pilot, long_50k)  # warm-up: imports, caches
        names = ("empty", "50k", "1m", "big", "small")
        opened: dict[str, list[float]] = {name: [] for name in names}
        settled_times: dict[str, list[float]] = {name: [] for name in names}
        cpu_times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for _ in range(args.runs):
            for name, session in (
                ("empty", empty),
                ("50k", long_50k),
                ("1m", long_1m),
                ("small", small),
                ("big", big),
            ):
                opened[name].append(await open_seconds(app, pilot, session))
                settled_times[name].append(SETTLED[-1])
                cpu_times[name].append((PAINTED_CPU[-1], SETTLED_CPU[-1]))
        found["settled"] = {name: median(times) for name, times in settled_times.items()}
        found["opened"] = {name: median(times) for name, times in opened.items()}
        found["cpu"] = {
            name: (median([p for p, _ in times]), median([b for _, b in times]))
            for name, times in cpu_times.items()
        }
        if args.only == "paint":
            return found
        found["input"] = await input_rounds(
            app, pilot, sides, args.rounds, args.sends, args.presses
        )
        await open_seconds(app, pilot, big)
        found["keys_big"] = median((await keypress_seconds(app, pilot, args.presses))[0])
        found["mounted_big"] = len(app.transcript.children)
    return found


def input_figures(found: InputRounds) -> None:
    """Each side's Enter and key medians with their spread, each ratio with its interval
    and whether it meets its target; `enter_ratio`/`key_ratio` are the worst side's."""
    for kind, walls, cpus in (
        ("enter", found.enter, found.enter_cpu),
        ("key", found.key, found.key_cpu),
    ):
        for side, rounds in walls.items():
            spread = Spread.of(flat(rounds)).scaled(1000)
            print(f"longsession.{kind}_{side}_ms: {spread.text()}", flush=True)
        worst: Ratio | None = None
        for side in walls:
            if side == "empty":
                continue
            ratio = paired_ratio(walls[side], walls["empty"])
            cpu = paired_ratio(cpus[side], cpus["empty"])
            print(f"longsession.{kind}_{side}_ratio: {ratio.text(INPUT_TARGET)}", flush=True)
            print(f"longsession.{kind}_{side}_cpu_ratio: {cpu.text(INPUT_TARGET)}", flush=True)
            if worst is None or ratio.value > worst.value:
                worst = ratio
        if worst is not None:
            print(f"longsession.{kind}_ratio: {worst.text(INPUT_TARGET)}", flush=True)


def child_figures(session_id: str, idle: float) -> dict[str, float]:
    """RSS and idle CPU of a fresh app process with `session_id` open."""
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "bench", "longsession", "--child", session_id]
    command += ["--idle", str(idle)]
    done = subprocess.run(
        command, cwd=root, env=os.environ.copy(), check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


async def child(session_id: str, idle: float) -> dict[str, float]:
    """Open `session_id` in a fresh app, rest a second, then measure CPU over `idle` s."""
    from agent.config import load_config
    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes

    app = HermesApp(load_config(demo=True), probes=Probes(cursor_blink=False))
    async with app.run_test(size=(120, 40)):
        await app.ready()
        await app.resume_session(session_id)
        await until(lambda: last_row_shown(app), "the last screen")
        await app.screen.wait_for_refresh()
        await asyncio.sleep(1.0)
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(idle)
        cpu_share = (time.process_time() - cpu) / (time.perf_counter() - wall)
        rss = resident_bytes()
    return {"rss": rss, "idle_cpu": cpu_share}


def resident_bytes() -> int:
    """This process's resident set now (Linux /proc), not its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def main(argv: list[str]) -> int:
    """Print the longsession figures, each beside the empty session it is measured against."""
    parser = argparse.ArgumentParser(prog="bench longsession")
    parser.add_argument("--runs", type=int, default=3, help="opens of each session to paint")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rounds of Enter and keys")
    parser.add_argument("--sends", type=int, default=3, help="Enters per side and round")
    parser.add_argument("--presses", type=int, default=10, help="keys per side and round")
    parser.add_argument(
        "--turns-side", action="store_true", help="the 1,000-turn session as a side too"
    )
    parser.add_argument(
        "--input-only", action="store_true", help="only the Enter and key figures (quicker)"
    )
    parser.add_argument("--idle", type=float, default=3.0)
    parser.add_argument(
        "--only",
        choices=["paint", "scroll"],
        help="paint: only the open figures (paint_*, built_*); scroll: only scroll_*",
    )
    parser.add_argument("--pages", type=int, default=SCROLL_PAGES, help="screens scrolled up")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(child(args.child, args.idle))), flush=True)
        return 0
    isolated_home()
    result = asyncio.run(measure(args))
    if args.only == "scroll":
        scroll_figures(result["scroll"])
        return 0
    if args.input_only:
        input_figures(result["input"])
        return 0
    opened = result["opened"]
    for name in ("empty", "50k", "1m"):
        figure(f"longsession.paint_{name}_ms", opened[name] * 1000)
    figure("longsession.paint_50k_ratio", opened["50k"] / opened["empty"])
    figure("longsession.paint_1m_ratio", opened["1m"] / opened["empty"])
    built = result["settled"]
    for name in ("empty", "50k", "1m"):
        figure(f"longsession.built_{name}_ms", built[name] * 1000)
    figure("longsession.built_50k_ratio", built["50k"] / built["empty"])
    figure("longsession.built_1m_ratio", built["1m"] / built["empty"])
    cpu = result["cpu"]
    for side in ("50k", "1m"):
        figure(f"longsession.paint_{side}_cpu_ratio", cpu[side][0] / cpu["empty"][0])
        figure(f"longsession.built_{side}_cpu_ratio", cpu[side][1] / cpu["empty"][1])
    if args.only == "paint":
        return 0
    input_figures(result["input"])
    sessions = result["sessions"]
    empty = child_figures(sessions["empty"], args.idle)
    turns = child_figures(sessions["turns"], args.idle)
    figure("longsession.rss_empty_mb", empty["rss"] / 2**20)
    figure("longsession.rss_1000_turns_mb", turns["rss"] / 2**20)
    figure("longsession.rss_ratio", turns["rss"] / empty["rss"])
    figure("longsession.idle_cpu_pct_empty", empty["idle_cpu"] * 100)
    figure("longsession.idle_cpu_pct", turns["idle_cpu"] * 100)
    figure("longsession.open_big_ms", opened["big"] * 1000)
    figure("longsession.open_small_ms", opened["small"] * 1000)
    figure("longsession.mounted_widgets", int(result["mounted_big"]))
    figure("longsession.open_ratio", opened["big"] / opened["small"])
    figure("longsession.keypress_big_ms", result["keys_big"] * 1000)
    keys_empty = statistics.median(flat(result["input"].key["empty"]))
    figure("longsession.keypress_ratio", result["keys_big"] / keys_empty)
    return 0
