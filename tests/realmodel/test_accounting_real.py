"""A stopped answer against a real llama.cpp server is accounted (S2-S7).

llama.cpp sends usage only in its last chunk, so a stop never reads it: the call is recorded
by estimate (the request's prompt, scaled by the server's last count, and the output so far).
"""

from __future__ import annotations

import threading

import pytest
from waits import wait_until

from agent import events as ev

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]


def test_a_stopped_answer_is_accounted_by_estimate(real, llama):
    agent = real.agent(llama(), provider={"max_tokens": 400, "context_window": 8192})
    assert agent.run_turn("Say hello.").status in ("ok", "truncated")
    first = [e for e in real.events if isinstance(e, ev.UsageUpdated)][-1]
    assert not first.estimated
    mark = len(real.events)
    box: dict = {}
    text = "Write a long story about a lighthouse keeper and a storm."
    thread = threading.Thread(target=lambda: box.setdefault("r", agent.run_turn(text)))
    thread.start()

    def streamed() -> bool:
        return sum(isinstance(e, ev.TextDelta) for e in real.events[mark:]) >= 20

    wait_until(streamed, timeout=300, what="20 pieces of the answer")
    agent.stop()
    thread.join(60)
    assert not thread.is_alive() and box["r"].status == "stopped"
    stopped = [e for e in real.events[mark:] if isinstance(e, ev.UsageUpdated)]
    assert len(stopped) == 1 and stopped[0].estimated
    # The prompt: at least the first call's (it holds it), well under twice it.
    assert first.input_tokens <= stopped[0].input_tokens < 2 * first.input_tokens
    assert stopped[0].output_tokens >= 5
    row = real.session(agent.session_id)
    assert (row["api_call_count"], row["estimated_calls"]) == (2, 1)
    assert row["output_tokens"] == first.output_tokens + stopped[0].output_tokens
    # The next call's server count holds the stopped one's prompt: the estimate was not high.
    assert agent.run_turn("Thanks.").status in ("ok", "truncated")
    after = [e for e in real.events if isinstance(e, ev.UsageUpdated)][-1]
    assert not after.estimated and after.input_tokens >= stopped[0].input_tokens * 0.8
