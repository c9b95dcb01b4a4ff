"""Randomised: steers and queued lines at random moments across turn ends; none lost or doubled."""

from __future__ import annotations

import random
import threading
import time

import pytest
from waits import wait_until

from agent.inbox import InputQueue
from agent.scripted import Script

SCRIPT = {
    "loop": True,
    "defaults": {"chunk_size": 6, "delay": 0.0003},
    "replies": [
        {
            "match": {"last_role": "user"},
            "text": "Looking around first.",
            "tool_calls": [{"id": "s_{n}", "name": "list_dir", "arguments": {"path": "."}}],
        },
        {"match": {"last_role": "tool"}, "text": "Done with that part of the work."},
    ],
}


def one_run(harness, seed: int, texts_per_run: int = 6) -> None:
    rng = random.Random(seed)
    agent = harness.agent()
    queue = InputQueue()
    sent = [f"msg-{seed}-{k}-end" for k in range(texts_per_run)]
    sending_done = threading.Event()
    wake = threading.Event()

    def submit(text: str) -> None:
        # The front end's rule: a steer the agent refuses joins the queue behind older input.
        if rng.random() < 0.6 and agent.steer(text):
            return
        queue.push(text)
        wake.set()

    def driver() -> None:
        while True:
            item = queue.pop_next()
            if item is None:
                if sending_done.is_set() and not len(queue):
                    return
                wake.wait(0.01)
                wake.clear()
                continue
            result = agent.run_turn(item.text)
            assert result.status == "ok", result.error
            if result.pending_steer:
                queue.push(result.pending_steer, origin="steer")

    thread = threading.Thread(target=driver)
    thread.start()
    for text in sent:
        time.sleep(rng.random() * 0.004)  # random moments, not waiting for anything
        submit(text)
    sending_done.set()
    wake.set()
    thread.join(60)
    assert not thread.is_alive()
    session_id = agent.session_id
    rows = harness.rows(session_id)
    user_rows = [r["content"] for r in rows if r["role"] == "user"]
    for text in sent:
        in_rows = sum(content.count(text) for content in user_rows)
        assert in_rows == 1, (text, user_rows)
    last = harness.server.requests[-1].raw.decode()
    for text in sent:
        assert last.count(text) == 1, text


def run_many(harness, runs: int) -> None:
    harness.start(SCRIPT)
    harness.server.set_script(Script.from_dict(SCRIPT))
    for seed in range(runs):
        harness.events.clear()
        one_run(harness, seed)
        # Each run starts on a quiet store: no write of the last run is still in flight.
        wait_until(lambda: harness.db.idle, what="the last run's writes landing")


def test_random_steers_and_queue_across_turn_ends(harness):
    run_many(harness, 50)


@pytest.mark.slow
def test_random_steers_and_queue_across_turn_ends_many(harness):
    run_many(harness, 500)
