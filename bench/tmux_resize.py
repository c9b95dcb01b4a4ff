"""A resize mid-stream in a real terminal: the app in tmux at 120x36, resized by 4 columns and
back while a long answer streams, against the same resize with no stream, in the same run.

Each resize is timed from `tmux resize-window` until the pane shows the app's new layout (the
status panel's left border, `▏`, has moved on the first line; the pane is read every 10 ms).
First `--idle` resizes with nothing streaming, then a long answer streams (`--seconds` of it,
paced by the scripted server) and a resize every `--every` seconds while it grows. Prints the
medians and the worst, the stream's over the idle one (`tmux_resize.stream_over_idle`), and the
median of the last third of the stream's resizes (the longest answer), beside the target:
a redraw within 0.3 s (issue 29).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench._common import figure, isolated_home, median
from bench.ui import make_text

SIZE = (120, 36)
STEP = 4
"""Columns a resize adds (and the next one takes away again)."""
SESSION = "hermes-bench-resize"
POLL = 0.01
BORDER = "▏"
CHUNK = 40


def tmux(*args: str) -> str:
    """Run one tmux command on the benchmark's own server socket; its output."""
    done = subprocess.run(
        ["tmux", "-L", SESSION, *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def screen() -> str:
    """The pane's text as it is now."""
    return tmux("capture-pane", "-p", "-t", SESSION)


def border_column(text: str) -> int:
    """Where the status panel's border is on the pane's first line (-1: not drawn)."""
    return text.split("\n", 1)[0].find(BORDER)


def wait_for(predicate, timeout: float) -> str:
    """Read the pane until `predicate(text)` holds; that text."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = screen()
        if predicate(text):
            return text
        time.sleep(POLL)
    raise TimeoutError(f"the pane did not show what was awaited within {timeout:.0f} s")


def timed_resize(columns: int, timeout: float = 20.0) -> float:
    """Seconds from resizing the window to `columns` until the app has drawn its new layout."""
    before = border_column(screen())
    started = time.perf_counter()
    tmux("resize-window", "-t", SESSION, "-x", str(columns), "-y", str(SIZE[1]))
    wait_for(lambda text: border_column(text) not in (before, -1), timeout)
    return time.perf_counter() - started


def start_server(text: str, delay: float) -> tuple[subprocess.Popen, str]:
    """The scripted server in its own process, streaming `text` in CHUNK-character chunks."""
    script = {"loop": True, "replies": [{"text": text, "chunk_size": CHUNK, "delay": delay}]}
    path = Path(tempfile.mkdtemp(prefix="hermes-bench-resize-")) / "script.yaml"
    path.write_text(yaml.safe_dump(script))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    return proc, url


def measure(home: Path, workspace: Path, args: argparse.Namespace) -> tuple[list, list]:
    """(idle resize seconds, stream resize seconds) for one app in tmux."""
    env = {"HERMES_TUI_HOME": str(home), "TERM": "xterm-256color"}
    command = f"cd {workspace} && exec {sys.executable} -m hermes_tui"
    subprocess.run(["tmux", "-L", SESSION, "kill-server"], capture_output=True)
    tmux(
        "new-session", "-d", "-s", SESSION, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
        *[arg for key, value in env.items() for arg in ("-e", f"{key}={value}")],
        command,
    )  # fmt: skip
    tmux("set-option", "-t", SESSION, "window-size", "manual")
    try:
        wait_for(lambda text: "bench" in text and border_column(text) > 0, timeout=60)
        widths = [SIZE[0] + STEP, SIZE[0]]
        idle = [timed_resize(widths[i % 2]) for i in range(args.idle)]
        if args.idle % 2:
            timed_resize(SIZE[0])
        tmux("send-keys", "-t", SESSION, "-l", "go")
        tmux("send-keys", "-t", SESSION, "Enter")
        wait_for(lambda text: "lorem" in text, timeout=30)
        streaming = []
        ends = time.monotonic() + args.seconds
        while time.monotonic() < ends:
            time.sleep(args.every)
            streaming.append(timed_resize(widths[len(streaming) % 2]))
        return idle, streaming
    finally:
        tmux("kill-server")


def main(argv: list[str]) -> int:
    """Print the resize figures, each beside its target."""
    parser = argparse.ArgumentParser(prog="python3 -m bench tmux_resize")
    parser.add_argument("--idle", type=int, default=6, help="resizes with no stream")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to resize mid-stream")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between those resizes")
    parser.add_argument("--delay", type=float, default=0.01, help="seconds between chunks")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("bench tmux_resize: tmux is not installed.", file=sys.stderr)
        return 1
    home = isolated_home()
    workspace = home / "ws"
    workspace.mkdir()
    # Far more text than streams in `--seconds`: the answer is still growing at the last resize.
    chunks = int(3 * args.seconds / args.delay)
    proc, url = start_server(make_text(chunks * CHUNK // 5), args.delay)
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model": "bench:bench",
                "providers": {"bench": {"kind": "openai", "base_url": f"{url}/v1", "api_key": "k"}},
            }
        )
    )
    try:
        idle, streaming = measure(home, workspace, args)
    finally:
        proc.terminate()
        proc.wait(5)
    late = streaming[-max(1, len(streaming) // 3) :]
    figure("tmux_resize.idle_median_s", median(idle))
    figure("tmux_resize.idle_max_s", max(idle))
    print("tmux_resize.stream target: <= 0.3 s", flush=True)
    figure("tmux_resize.stream_median_s", median(streaming))
    figure("tmux_resize.stream_late_median_s", median(late))
    figure("tmux_resize.stream_max_s", max(streaming))
    figure("tmux_resize.stream_over_idle", median(streaming) / median(idle))
    figure("tmux_resize.samples", len(streaming))
    print("tmux_resize.each_s: " + " ".join(f"{s:.2f}" for s in streaming), flush=True)
    return 0
