"""Peak memory of the app against a hostile answer: idle vs. 10 MB and 100 MB, headless and TUI.

Each figure is one fresh app process (its peak RSS from `wait4`), the scripted model in a
process of its own streaming the answer in 16 KB deltas. "Idle" is the same app answering
"ok". Target (H10): a hostile answer's peak is at most 2x the idle peak plus 3x the answer
bound (`agent.max_answer_mb`, 4 MB); `rss.*_target_ratio` is peak / that, so <= 1 meets it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import yaml

from bench._common import figure, isolated_home

MB = 1024 * 1024
PIECE = 16 * 1024
CAP_MB = 4
_CHUNK = 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'

TUI_CODE = """
import asyncio
from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.probes import Probes

async def main():
    app = HermesApp(load_config(), probes=Probes(cursor_blink=False))
    async with app.run_test(headless=True, size=(120, 40)) as pilot:
        await pilot.pause()
        await app.submit("go")
        await app.wait_for_turn(timeout=900)
        await pilot.pause()

asyncio.run(main())
"""


def answer(size: int) -> dict:
    """A reply of `size` characters of answer text in 16 KB deltas ("ok" when 0)."""
    if not size:
        return {"text": "ok"}
    line = _CHUNK + '"delta":{"content":"' + "x" * PIECE + '"},"finish_reason":null}]}\n\n'
    return {
        "raw_sse": [
            {"repeat": line, "times": size // PIECE},
            _CHUNK + '"delta":{},"finish_reason":"stop"}]}\n\n',
            "data: [DONE]\n\n",
        ]
    }


def start_server(size: int) -> tuple[subprocess.Popen, str]:
    """The scripted server in its own process (its memory is not the app's)."""
    path = Path(tempfile.mkdtemp(prefix="hermes-bench-rss-")) / "script.yaml"
    path.write_text(yaml.safe_dump({"loop": True, "replies": [answer(size)]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    return proc, url


def peak_mb(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> float | None:
    """The peak RSS in MB of one process running `argv` (None when it ran past `timeout`)."""
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)  # reaps it, with its resource usage
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode == -signal.SIGKILL:
        return None
    return usage.ru_maxrss / 1024  # KB on Linux


def measure(mode: str, size: int, home: Path, timeout: float) -> float | None:
    """Peak RSS (MB) of one app run in `mode` (headless or tui) against a `size` answer."""
    server, url = start_server(size)
    try:
        config = {
            "model": "bench:bench",
            "providers": {"bench": {"kind": "openai", "base_url": f"{url}/v1", "api_key": "k"}},
            "agent": {"approval": "yolo"},
        }
        (home / "config.yaml").write_text(yaml.safe_dump(config))
        env = {**os.environ, "HERMES_TUI_HOME": str(home)}
        if mode == "headless":
            argv = [sys.executable, "-m", "hermes_tui", "run", "--yes", "go"]
        else:
            argv = [sys.executable, "-c", TUI_CODE]
        return peak_mb(argv, env, home, timeout)
    finally:
        server.terminate()
        server.wait(10)


def main(argv: list[str]) -> int:
    """Print rss.idle_mb, rss.tui_idle_mb, rss.{headless,tui}_{10,100}mb_mb and the ratios to
    the target."""
    parser = argparse.ArgumentParser(prog="python3 -m bench rss")
    parser.add_argument("--sizes", default="10,100", help="hostile answer sizes in MB")
    parser.add_argument("--modes", default="headless,tui")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    args = parser.parse_args(argv)
    home = isolated_home()
    sizes = [int(size) for size in args.sizes.split(",") if size]
    for mode in args.modes.split(","):
        idle = measure(mode, 0, home, args.timeout)
        assert idle is not None, f"the idle {mode} run did not finish"
        figure("rss.idle_mb" if mode == "headless" else "rss.tui_idle_mb", idle)
        target = 2 * idle + 3 * CAP_MB
        for size in sizes:
            peak = measure(mode, size * MB, home, args.timeout)
            name = f"rss.{mode}_{size}mb"
            if peak is None:
                print(f"{name}_mb: did not finish within {args.timeout:g} s", flush=True)
                continue
            figure(f"{name}_mb", peak)
            figure(f"{name}_target_ratio", peak / target)
    return 0
