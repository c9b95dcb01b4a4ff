"""Streaming through the whole app: 20,000 chunks into the TUI (headless) vs. a bare SDK loop,
and how soon a key typed during that stream shows in the composer."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench._common import figure, isolated_home, median, p95

CHUNK = 5
KEY_GAP = 0.05
"""Seconds between two keys typed during a stream (a fast typist's pace)."""
ECHO_DEADLINE = 30.0
"""How long one key may take to echo before the bench fails (a stuck app, not a slow one)."""


def make_text(chunks: int) -> str:
    """Markdown prose of exactly `chunks` * CHUNK characters, in paragraphs."""
    words = []
    for i in range(chunks * CHUNK):
        words.append("lorem ipsum dolor sit amet "[i % 27])
    text = list("".join(words))
    for i in range(400, len(text), 400):
        text[i] = "\n"
        if i + 1 < len(text):
            text[i + 1] = "\n"
    return "".join(text)


def start_server(text: str) -> tuple[subprocess.Popen, str]:
    """The scripted server in its own process, so its CPU is not counted as ours."""
    script = {"loop": True, "replies": [{"text": text, "chunk_size": CHUNK}]}
    path = Path(tempfile.mkdtemp(prefix="hermes-bench-ui-")) / "script.yaml"
    path.write_text(yaml.safe_dump(script))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    return proc, url


def bare_stream(base_url: str) -> tuple[float, float, str]:
    """(wall s, cpu s, text) for a bare openai-SDK loop consuming the stream."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    wall, cpu = time.perf_counter(), time.process_time()
    parts = []
    for chunk in client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": "go"}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    result = time.perf_counter() - wall, time.process_time() - cpu, "".join(parts)
    client.close()
    return result


async def app_stream(config, workspace: Path) -> tuple[float, float, str]:
    """(wall s, cpu s, final text) for one turn through HermesApp running headless."""
    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes
    from hermes_tui.widgets.messages import AnswerBlock

    app = HermesApp(config, workspace=workspace, probes=Probes(cursor_blink=False))
    async with app.run_test(headless=True, size=(120, 40)) as pilot:
        await pilot.pause()
        wall, cpu = time.perf_counter(), time.process_time()
        await app.submit("go")
        await app.wait_for_turn(timeout=300)
        await pilot.pause()
        result = time.perf_counter() - wall, time.process_time() - cpu
        answers = list(app.query(AnswerBlock))
        shown = answers[-1].source if answers else ""
    return (*result, shown)


async def key_echo_during_stream(config, workspace: Path) -> list[float]:
    """Seconds from each key event to its echo painted in the composer, for the keys typed
    (one per KEY_GAP) while the answer streams; a separate turn, so the timed one is untouched."""
    from textual import events

    from hermes_tui.app import HermesApp
    from hermes_tui.probes import Probes
    from hermes_tui.widgets.messages import AnswerBlock

    async def until(condition, what: str) -> None:
        deadline = time.monotonic() + ECHO_DEADLINE
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"bench ui: {what} took over {ECHO_DEADLINE:.0f} s")
            await asyncio.sleep(0)

    app = HermesApp(config, workspace=workspace, probes=Probes(cursor_blink=False))
    echoes: list[float] = []
    async with app.run_test(headless=True, size=(120, 40)) as pilot:
        await pilot.pause()
        await app.submit("go")
        streaming = lambda: any(a.source for a in app.query(AnswerBlock))  # noqa: E731
        await until(streaming, "the first streamed text")
        composer = app.composer
        composer.focus()
        while app.busy:
            typed = len(composer.text)
            started = time.perf_counter()
            app.post_message(events.Key("a", "a"))
            await until(lambda typed=typed: len(composer.text) > typed, "a key's echo")
            await app.screen.wait_for_refresh()
            if app.busy:  # only keys echoed while the answer still streams count
                echoes.append(time.perf_counter() - started)
            await asyncio.sleep(KEY_GAP)
        await app.wait_for_turn(timeout=300)
    return echoes


def main(argv: list[str]) -> int:
    """Print ui.stream_ratio (app wall time / bare SDK loop, median of paired rounds),
    ui.cpu_ms_per_1k_chunks and the key-to-echo during a stream."""
    parser = argparse.ArgumentParser(prog="python3 -m bench ui")
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    home = isolated_home()
    workspace = home / "ws"
    workspace.mkdir()
    text = make_text(args.chunks)
    proc, url = start_server(text)
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model": "bench:bench",
                "providers": {"bench": {"kind": "openai", "base_url": f"{url}/v1", "api_key": "k"}},
            }
        )
    )
    from agent.config import load_config

    config = load_config()
    bare_wall, app_wall, app_cpu, bare_cpu, echoes = [], [], [], [], []
    try:
        for _ in range(args.rounds):  # interleaved, so machine noise hits both alike
            wall, cpu, streamed = bare_stream(f"{url}/v1")
            assert streamed == text, "the bare loop lost text"
            bare_wall.append(wall)
            bare_cpu.append(cpu)
            wall, cpu, shown = asyncio.run(app_stream(config, workspace))
            assert shown == text, "the app's final text differs from the streamed text"
            app_wall.append(wall)
            app_cpu.append(cpu)
            echoes += asyncio.run(key_echo_during_stream(config, workspace))
    finally:
        proc.terminate()
        proc.wait(5)
    figure("ui.bare_cpu_ms_per_1k_chunks", median(bare_cpu) * 1000 / (args.chunks / 1000))
    figure("ui.cpu_ms_per_1k_chunks", median(app_cpu) * 1000 / (args.chunks / 1000))
    # Each round runs the bare loop and the app back to back, so a slow spell on this shared
    # machine hits both halves of a pair: the figure is the median of the paired ratios.
    paired = [app / bare for app, bare in zip(app_wall, bare_wall, strict=True)]
    print("ui.paired_ratios:", " ".join(f"{ratio:.3f}" for ratio in paired), flush=True)
    figure("ui.stream_ratio_of_medians", median(app_wall) / median(bare_wall))
    figure("ui.stream_ratio", median(paired))
    figure("ui.keys_echoed_during_stream", len(echoes))
    if echoes:
        figure("ui.key_echo_during_stream_ms", median(echoes) * 1000)
        figure("ui.key_echo_during_stream_p95_ms", p95(echoes) * 1000)
    return 0
