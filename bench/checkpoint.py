"""Checkpoints: a snapshot of a 10,000-file workspace, the next one after a one-file change,
and a scripted tool turn with checkpoints on / off, side by side (X2)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
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


def _snapshots(home: Path, rounds: int) -> None:
    from agent.checkpoints.shadow import ShadowRepo

    workspace = _workspace(home / "big")
    first, warm, incremental = [], [], []
    for round_ in range(rounds):
        shadow = home / f"shadow{round_}"
        repo = ShadowRepo(workspace, shadow)
        start = time.perf_counter()
        repo.snapshot()
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        repo.snapshot()
        warm.append(time.perf_counter() - start)
        for step in range(3):
            (workspace / "pkg000" / "mod000.py").write_text(f"x = {round_}.{step}\n")
            start = time.perf_counter()
            repo.snapshot()
            incremental.append(time.perf_counter() - start)
        shutil.rmtree(shadow)
    figure("checkpoint.ms_10k_files", median(first) * 1000)
    figure("checkpoint.turn_ms_10k_files", median(warm) * 1000)
    figure("checkpoint.incremental_ms", median(incremental) * 1000)


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


def _turns(home: Path, turns: int) -> None:
    from agent.config import load_config
    from agent.loop import Agent
    from agent.scripted import Script, ScriptedServer
    from storage.db import SessionDB

    server = ScriptedServer(Script.from_dict(SCRIPT)).start()
    url = server.openai_base_url
    (home / "config.yaml").write_text(
        "model: bench:bench\n"
        f"providers: {{bench: {{kind: openai, base_url: '{url}', api_key: k}}}}\n"
        "agent: {approval: yolo}\nsandbox: off\n"
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    db = asyncio.run_coroutine_threadsafe(SessionDB.open(home / "state.db"), loop).result()
    agents = {}
    for name, enabled in (("on", True), ("off", False)):
        workspace = home / f"ws-{name}"
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
        assert result.status == "ok", result.error
        return time.perf_counter() - start

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
    figure("checkpoint.turn_on_ms", median(times["on"]) * 1000)
    figure("checkpoint.turn_off_ms", median(times["off"]) * 1000)
    figure("checkpoint.turn_overhead_ratio", median(times["on"]) / median(times["off"]))


def main(argv: list[str]) -> int:
    """Print checkpoint.ms_10k_files, checkpoint.incremental_ms, turn_overhead_ratio."""
    parser = argparse.ArgumentParser(prog="python3 -m bench checkpoint")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args(argv)
    home = isolated_home()
    try:
        _snapshots(home, args.rounds)
        _turns(home, args.turns)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0
