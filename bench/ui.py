"""Streaming through the whole app: 20,000 chunks into the TUI (headless) vs. a bare SDK loop."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench._common import figure, isolated_home, median

CHUNK = 5


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


def main(argv: list[str]) -> int:
    """Print ui.stream_ratio (app wall time / bare SDK loop, median of paired rounds) and
    ui.cpu_ms_per_1k_chunks."""
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
    bare_wall, app_wall, app_cpu, bare_cpu = [], [], [], []
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
    return 0
