"""Stop latency while the server streams, and steer delivery across random turn ends."""

from __future__ import annotations

import argparse
import asyncio
import random
import threading
import time

from bench._common import figure, isolated_home, p95

STREAM = {
    "loop": True,
    "replies": [{"text": "streaming words " * 2000, "chunk_size": 8, "delay": 0.002}],
}
STEERS = {
    "loop": True,
    "defaults": {"chunk_size": 6, "delay": 0.0003},
    "replies": [
        {
            "match": {"last_role": "user"},
            "text": "Looking.",
            "tool_calls": [{"id": "b_{n}", "name": "list_dir", "arguments": {"path": "."}}],
        },
        {"match": {"last_role": "tool"}, "text": "Done."},
    ],
}


def _setup(home, script):
    from agent.config import load_config
    from agent.loop import Agent
    from agent.scripted import Script, ScriptedServer
    from storage.db import SessionDB

    server = ScriptedServer(Script.from_dict(script)).start()
    url = server.openai_base_url
    (home / "config.yaml").write_text(
        "model: bench:bench\n"
        f"providers: {{bench: {{kind: openai, base_url: '{url}', api_key: k}}}}\n"
        "agent: {approval: yolo}\n"
    )
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    db = asyncio.run_coroutine_threadsafe(SessionDB.open(home / "state.db"), loop).result()
    workspace = home / "ws"
    workspace.mkdir(exist_ok=True)
    return server, loop, db, lambda: Agent(load_config(), store=db, workspace=workspace)


def _teardown(server, loop, db, agent) -> None:
    agent.close()
    asyncio.run_coroutine_threadsafe(db.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    server.stop()


def stop_latencies(home, rounds: int) -> list[float]:
    """Milliseconds from stop() to run_turn returning, stopped at random points of a stream."""
    server, loop, db, make_agent = _setup(home, STREAM)
    agent = make_agent()
    rng = random.Random(1)
    latencies = []
    # One untimed round first: the provider SDK is imported on the first request, and a stop
    # that lands during that import would measure the import, not the abort.
    for _ in range(rounds + 1):
        started = threading.Event()
        agent.sink = lambda event, started=started: started.set()
        box = {}
        thread = threading.Thread(target=lambda box=box: box.setdefault("t", agent.run_turn("go")))
        thread.start()
        started.wait(10)
        time.sleep(rng.random() * 0.05)  # a random point in the stream
        t0 = time.perf_counter()
        agent.stop()
        thread.join(10)
        latencies.append((time.perf_counter() - t0) * 1000)
        assert box["t"].status == "stopped"
    latencies = latencies[1:]
    _teardown(server, loop, db, agent)
    return latencies


def steer_delivery(home, runs: int) -> float:
    """Steers delivered exactly once (or returned to the user) / steers sent."""
    from agent.inbox import InputQueue

    server, loop, db, make_agent = _setup(home, STEERS)
    rng = random.Random(2)
    sent_total = ok_total = 0
    last_agent = None
    for run in range(runs):
        agent = last_agent = make_agent()
        queue = InputQueue()
        texts = [f"steer-{run}-{k}-end" for k in range(6)]
        done = threading.Event()

        def driver(agent=agent, queue=queue, done=done) -> None:
            while not (done.is_set() and not len(queue)):
                item = queue.pop_next()
                if item is None:
                    time.sleep(0.001)
                    continue
                result = agent.run_turn(item.text)
                if result.pending_steer:
                    queue.push(result.pending_steer, origin="steer")

        thread = threading.Thread(target=driver)
        thread.start()
        for text in texts:
            time.sleep(rng.random() * 0.004)
            if not agent.steer(text):
                queue.push(text)
        done.set()
        thread.join(60)
        users = [m.content for m in agent.messages if m.role == "user"]
        for text in texts:
            sent_total += 1
            ok_total += sum(u.count(text) for u in users) == 1
    _teardown(server, loop, db, last_agent)
    return ok_total / sent_total


def main(argv: list[str]) -> int:
    """Print interrupts.stop_latency_p95_ms and interrupts.steer_delivery_ratio."""
    parser = argparse.ArgumentParser(prog="python3 -m bench interrupts")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    home = isolated_home()
    latencies = stop_latencies(home, args.rounds)
    ratio = steer_delivery(home, args.runs)
    figure("interrupts.stop_latency_median_ms", sorted(latencies)[len(latencies) // 2])
    figure("interrupts.stop_latency_p95_ms", p95(latencies))
    figure("interrupts.steer_delivery_ratio", ratio)
    return 0
