"""Checkpoints: a snapshot of a 10,000-file workspace beside plain `git add -A` of the same
tree, the next one after a one-file change, and a scripted tool turn with checkpoints on /
off, side by side (X2)."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import subprocess
import threading
import time
from pathlib import Path

from bench._common import figure, isolated_home, median

FILES = 10_000
PER_DIR = 100


def _workspace(root: Path) -> Path:
    """A generated workspace: 100 folders of 100 small source files, and a .gitignore."""
    root.mkdir(parents=True)
    for folder in range(FILES // PER_DIR):
        path = root / f"pkg{folder:03d}"
        path.mkdir()
        for index in range(PER_DIR):
            number = folder * PER_DIR + index
            (path / f"mod{index:03d}.py").write_text(
                f'"""Module {number}."""\n\n\ndef f{number}(x):\n    return x + {number}\n'
            )
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    return root


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children: the figure a
    busy machine distorts least."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(action) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `action()`."""
    wall, cpu = time.perf_counter(), _cpu()
    action()
    return time.perf_counter() - wall, _cpu() - cpu


def _git_env(workspace: Path, git_dir: Path) -> dict[str, str]:
    """The environment the app runs git in (shadow.py): none of the user's git settings,
    a GIT_DIR and an index of its own. Written out here so the yardstick stays plain git,
    whatever the app's own runs come to add."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") and name not in ("HOME", "XDG_CONFIG_HOME", "PREFIX")
    }
    env.update(
        {
            "HOME": str(git_dir),
            "XDG_CONFIG_HOME": str(git_dir),
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(workspace),
            "GIT_INDEX_FILE": str(git_dir / "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_SYSTEM": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
    )
    return env


def _plain_git_add(workspace: Path, git_dir: Path):
    """An action running plain `git add -A` of `workspace` into a fresh bare repository at
    `git_dir` (created here, untimed): git's own defaults, the yardstick of a first snapshot."""
    env = _git_env(workspace, git_dir)
    git_dir.mkdir()
    subprocess.run(
        ["git", "init", "-q", "--bare", "--template=", str(git_dir)],
        env={k: v for k, v in env.items() if k != "GIT_WORK_TREE"},
        check=True,
        capture_output=True,
    )

    def add() -> None:
        subprocess.run(
            ["git", "add", "-A"], env=env, cwd=workspace, check=True, capture_output=True
        )

    return add


def _snapshots(home: Path, rounds: int) -> None:
    from agent.checkpoints.shadow import ShadowRepo

    workspace = _workspace(home / "big")
    first, warm, incremental, git_add = [], [], [], []
    for round_ in range(rounds):
        shadow = home / f"shadow{round_}"
        repo = ShadowRepo(workspace, shadow)
        plain = _plain_git_add(workspace, home / f"plain{round_}")
        # Back to back, the order turned each round: a busy spell hits both sides alike.
        if round_ % 2:
            git_add.append(_timed(plain))
            first.append(_timed(repo.snapshot))
        else:
            first.append(_timed(repo.snapshot))
            git_add.append(_timed(plain))
        shutil.rmtree(home / f"plain{round_}")
        warm.append(_timed(repo.snapshot))
        for step in range(3):
            (workspace / "pkg000" / "mod000.py").write_text(f"x = {round_}.{step}\n")
            incremental.append(_timed(repo.snapshot))
        shutil.rmtree(shadow)
    for name, times in (
        ("ms_10k_files", first), ("git_add_ms_10k_files", git_add),
        ("unchanged_ms_10k_files", warm), ("incremental_ms", incremental),
    ):  # fmt: skip
        figure(f"checkpoint.{name}", median([wall for wall, _ in times]) * 1000)
        figure(f"checkpoint.{name}_cpu", median([cpu for _, cpu in times]) * 1000)
    # The median of the paired ratios: each pair ran back to back on the same machine state.
    for suffix, side in (("", 0), ("_cpu", 1)):
        paired = [ours[side] / git[side] for ours, git in zip(first, git_add, strict=True)]
        figure(f"checkpoint.ratio_vs_git_add{suffix}", median(paired))


SCRIPT = {
    "loop": True,
    "defaults": {"chunk_size": 16},
    "replies": [
        {
            "match": {"last_role": "user"},
            "text": "Let me change the file.",
            "tool_calls": [
                {
                    "id": "e_{n}",
                    "name": "write_file",
                    "arguments": {"path": "notes.txt", "content": "turn {n}\n"},
                }
            ],
        },
        {"match": {"last_role": "tool"}, "text": "Changed it. " * 10},
    ],
}


def _turns(home: Path, turns: int, delay: float, suffix: str) -> None:
    """Turns with checkpoints on and off, interleaved; `delay` between streamed chunks."""
    from agent.config import load_config
    from agent.loop import Agent
    from agent.scripted import Script, ScriptedServer
    from storage.db import SessionDB

    script = {**SCRIPT, "defaults": {**SCRIPT["defaults"], "delay": delay}}
    server = ScriptedServer(Script.from_dict(script)).start()
    url = server.openai_base_url
    (home / "config.yaml").write_text(
        "model: bench:bench\n"
        f"providers: {{bench: {{kind: openai, base_url: '{url}', api_key: k}}}}\n"
        "agent: {approval: yolo}\nsandbox: off\n"
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    db = asyncio.run_coroutine_threadsafe(SessionDB.open(home / f"state{suffix}.db"), loop).result()
    agents = {}
    for name, enabled in (("on", True), ("off", False)):
        workspace = home / f"ws-{name}{suffix}"
        workspace.mkdir()
        (workspace / "README.md").write_text("# bench\n")
        config = load_config()
        from dataclasses import replace

        config = replace(config, checkpoints=replace(config.checkpoints, enabled=enabled))
        agents[name] = Agent(config, store=db, workspace=workspace)
    assert agents["on"].checkpointer is not None and agents["off"].checkpointer is None

    def turn(agent: Agent) -> float:
        agent.new_session()
        start = time.perf_counter()
        result = agent.run_turn("change the notes")
        took = time.perf_counter() - start
        assert result.status == "ok", result.error
        if agent.checkpointer is not None:
            # The turn's closing snapshot runs after it, while the user reads and types:
            # the next message does not come a millisecond later.
            agent.checkpointer.idle()
        # Nothing either side queued (the closing snapshot's row) lands in the other's turn.
        asyncio.run_coroutine_threadsafe(db.flush(), loop).result()
        return took

    for agent in agents.values():
        turn(agent)  # warm both paths
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(turns):  # interleaved, so machine noise hits both sides alike
        for name, agent in agents.items():
            times[name].append(turn(agent))
    for agent in agents.values():
        agent.close()
    asyncio.run_coroutine_threadsafe(db.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    server.stop()
    figure(f"checkpoint.turn_on_ms{suffix}", median(times["on"]) * 1000)
    figure(f"checkpoint.turn_off_ms{suffix}", median(times["off"]) * 1000)
    ratio = median(times["on"]) / median(times["off"])
    figure(f"checkpoint.turn_overhead_ratio{suffix}", ratio)


def main(argv: list[str]) -> int:
    """Print checkpoint.ms_10k_files, checkpoint.ratio_vs_git_add (that first snapshot / plain
    `git add -A` of the same tree; target <= 0.3), checkpoint.incremental_ms and
    turn_overhead_ratio (wall times, p50; `_cpu` is the CPU time of the same, which a loaded
    machine distorts less)."""
    parser = argparse.ArgumentParser(prog="python3 -m bench checkpoint")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument(
        "--snapshots-only", action="store_true", help="skip the scripted turns (a quicker run)"
    )
    args = parser.parse_args(argv)
    home = isolated_home()
    try:
        _snapshots(home, args.rounds)
        if args.snapshots_only:
            return 0
        # A model that answers at once (the worst case: nothing hides the snapshot), then one
        # that streams its chunks 20 ms apart (still far quicker than a real one).
        _turns(home, args.turns, 0.0, "")
        _turns(home, args.turns, 0.02, "_streaming")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0
