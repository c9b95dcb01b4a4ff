"""Streaming in a real terminal: the app in tmux at 140x40 against a bare SDK loop and the raw
socket read of the same 20,000-chunk stream from the same scripted server, in the same run.

Each round times, back to back: the raw socket read of the stream (the floor), a bare
openai-SDK loop consuming it, and the app in tmux from Enter until the answer's last word is
on the screen (the pane is read every 20 ms). Enter is pressed once the started app has gone
idle (as the bare loop's clock starts after `import openai`): the figure is the stream's, not
what start-up leaves to do. After that word shows, the app's own CPU time is sampled until a
whole `--quiet` window passes with next to none: that is when the screen went idle. Prints
medians over `--rounds`: `tmux.app_over_bare_sdk` (target <= 0.3),
`tmux.app_over_raw_socket` (target <= 5) and `tmux.idle_after_last_chunk_s` (target <= 0.5);
beside them `tmux.app_cpu_over_bare_sdk_cpu`, the same ratio in CPU time (the app's process
from Enter to the last word against the bare loop's), which a loaded machine moves less.
mistral-vibe, the peer the issue compares with, is not timed: it does not install here, and the
benchmark says so.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from bench._common import figure, isolated_home, median
from bench.ui import bare_stream, make_text, start_server

SIZE = (140, 40)
END_WORD = "QQENDQQ"
"""The answer's last word: unique, so its showing up on the screen marks the stream's end."""
SESSION = "hermes-bench-stream"
POLL = 0.02


def raw_socket_seconds(base_url: str) -> float:
    """Wall time to read the whole SSE response over a plain socket (no parsing at all)."""
    parts = urlsplit(base_url)
    body = json.dumps(
        {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    ).encode()
    request = (
        f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body
    started = time.perf_counter()
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(request)
        while sock.recv(1 << 16):
            pass
    return time.perf_counter() - started


def tmux(*args: str) -> str:
    """Run one tmux command on the benchmark's own server socket; its output."""
    done = subprocess.run(
        ["tmux", "-L", SESSION, *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def wait_for_screen(predicate, timeout: float) -> float:
    """Read the pane until `predicate(text)` holds; the perf_counter time it first did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate(tmux("capture-pane", "-p", "-t", SESSION)):
            return time.perf_counter()
        time.sleep(POLL)
    raise TimeoutError(f"the screen did not show what was awaited within {timeout:.0f} s")


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_after(pid: int, since: float, quiet: float, timeout: float = 20.0) -> float:
    """Seconds from `since` to the start of the first `quiet`-long window of (almost) no CPU."""
    window_start, window_cpu = time.perf_counter(), cpu_seconds(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(POLL)
        now, used = time.perf_counter(), cpu_seconds(pid)
        if used - window_cpu > 0.02:  # still working: the window starts again from here
            window_start, window_cpu = now, used
        elif now - window_start >= quiet:
            return max(0.0, window_start - since)
    raise TimeoutError("the app did not go idle")


def app_in_tmux_seconds(home: Path, workspace: Path, quiet: float) -> tuple[float, float, float]:
    """(Enter to the last word on screen, the app's CPU seconds meanwhile, last word to idle)
    for one turn of the app in tmux."""
    env = {"HERMES_TUI_HOME": str(home), "TERM": "xterm-256color"}
    command = f"cd {workspace} && exec {sys.executable} -m hermes_tui"
    if _tmux_running():  # a server left by an interrupted run
        tmux("kill-server")
    tmux(
        "new-session", "-d", "-s", SESSION, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
        *[arg for key, value in env.items() for arg in ("-e", f"{key}={value}")],
        command,
    )  # fmt: skip
    try:
        pid = int(tmux("display-message", "-p", "-t", SESSION, "#{pane_pid}").strip())
        # The status panel names the model once the agent is up (after the first frame).
        wait_for_screen(lambda text: "bench" in text, timeout=60)
        idle_after(pid, time.perf_counter(), quiet, timeout=60)  # start-up's work is done
        tmux("send-keys", "-t", SESSION, "-l", "go")
        cpu = cpu_seconds(pid)
        tmux("send-keys", "-t", SESSION, "Enter")
        started = time.perf_counter()
        shown = wait_for_screen(lambda text: END_WORD in text, timeout=300)
        cpu = cpu_seconds(pid) - cpu
        return shown - started, cpu, idle_after(pid, shown, quiet)
    finally:
        tmux("kill-server")


def _tmux_running() -> bool:
    return (
        subprocess.run(["tmux", "-L", SESSION, "has-session"], capture_output=True).returncode == 0
    )


def main(argv: list[str]) -> int:
    """Print the tmux streaming figures, each beside its target."""
    parser = argparse.ArgumentParser(prog="python3 -m bench tmux_stream")
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quiet", type=float, default=0.25, help="idle window (seconds)")
    args = parser.parse_args(argv)
    if shutil.which("tmux") is None:
        print("bench tmux_stream: tmux is not installed.", file=sys.stderr)
        return 1
    home = isolated_home()
    workspace = home / "ws"
    workspace.mkdir()
    text = make_text(args.chunks) + " " + END_WORD
    proc, url = start_server(text)
    base_url = f"{url}/v1"
    (home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model": "bench:bench",
                "providers": {"bench": {"kind": "openai", "base_url": base_url, "api_key": "k"}},
            }
        )
    )
    raw, bare, bare_cpu, app, app_cpu, idle = [], [], [], [], [], []
    try:
        for _ in range(args.rounds):  # interleaved, so machine noise hits all three alike
            raw.append(raw_socket_seconds(base_url))
            wall, cpu, _text = bare_stream(base_url)
            bare.append(wall)
            bare_cpu.append(cpu)
            shown, cpu, quiet_after = app_in_tmux_seconds(home, workspace, args.quiet)
            app.append(shown)
            app_cpu.append(cpu)
            idle.append(quiet_after)
    finally:
        proc.terminate()
        proc.wait(5)
    figure("tmux.raw_socket_s", median(raw))
    figure("tmux.bare_sdk_s", median(bare))
    figure("tmux.app_s", median(app))
    print("tmux.app_over_bare_sdk target: <= 0.3", flush=True)
    figure("tmux.app_over_bare_sdk", median([a / b for a, b in zip(app, bare, strict=True)]))
    ratios = [a / b for a, b in zip(app_cpu, bare_cpu, strict=True)]
    figure("tmux.app_cpu_over_bare_sdk_cpu", median(ratios))
    print("tmux.app_over_raw_socket target: <= 5", flush=True)
    figure("tmux.app_over_raw_socket", median([a / r for a, r in zip(app, raw, strict=True)]))
    print("tmux.idle_after_last_chunk_s target: <= 0.5", flush=True)
    figure("tmux.idle_after_last_chunk_s", median(idle))
    print("tmux.peer: mistral-vibe does not install here; not timed", flush=True)
    return 0
