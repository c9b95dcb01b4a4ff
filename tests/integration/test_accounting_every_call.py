"""Every model call is accounted (S2-S7): summaries too, and a stopped or failed call by
estimate, marked estimated, through the same recorder and queue as any call."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from test_compaction import seed, start, summary_reply, turns
from waits import wait_until

from agent import events as ev
from agent.kinds import CallPurpose
from agent.models import estimate_request

WIRES = ["openai", "anthropic"]


def session_row(harness, sid: str) -> dict:
    harness.agents[0].writer.flush(sid, tokens=True, when="test")
    return harness.loop.run(harness.db.get_session(sid))


def usage_rows(harness, sid: str) -> list[tuple]:
    conn = sqlite3.connect(harness.home / "state.db")
    try:
        return conn.execute(
            "SELECT input_tokens, output_tokens, api_call_count, estimated_calls"
            " FROM session_model_usage WHERE session_id = ?",
            (sid,),
        ).fetchall()
    finally:
        conn.close()


def usage_events(harness) -> list[ev.UsageUpdated]:
    return [e for e in harness.events if isinstance(e, ev.UsageUpdated)]


@pytest.mark.parametrize("wire", WIRES)
def test_summary_calls_are_counted_like_any_call(harness, wire):
    agent = start(harness, [summary_reply(usage={"output_tokens": 17}), *turns(4)], wire=wire)
    sid = seed(agent, 4)
    before = session_row(harness, sid)
    assert agent.compact().ok
    after = session_row(harness, sid)
    assert after["api_call_count"] == before["api_call_count"] + 1 == 5
    assert after["output_tokens"] == before["output_tokens"] + 17
    assert after["input_tokens"] > before["input_tokens"]
    summary = usage_events(harness)[-1]
    assert summary.purpose == CallPurpose.SUMMARY and summary.output_tokens == 17
    assert not summary.estimated
    assert agent.usage.output_tokens == after["output_tokens"]  # the running totals too


def stop_after_text(harness, agent, text: str = "go"):
    """Run a turn in a thread and stop it once answer text has streamed; its result."""
    box: dict = {}
    mark = len(harness.events)
    thread = threading.Thread(target=lambda: box.setdefault("r", agent.run_turn(text)))
    thread.start()
    wait_until(lambda: sum(isinstance(e, ev.TextDelta) for e in harness.events[mark:]) >= 4)
    agent.stop()
    thread.join(15)
    assert not thread.is_alive()
    return box["r"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_stopped_answer_is_accounted_by_estimate(harness, wire):
    # llama.cpp's shape: usage comes only in the last chunk, which a stop never reads.
    slow = {"text": "a long answer " * 40, "chunk_size": 4, "gate": "held", "gate_after": 8}
    agent = start(harness, [*turns(2), slow], wire=wire)
    sid = seed(agent, 2)
    before = session_row(harness, sid)
    expected_prompt = agent.compressor.gauge.project(estimate_request(agent.request()))
    result = stop_after_text(harness, agent)
    harness.server.open_gate("held")
    assert result.status == "stopped"
    after = session_row(harness, sid)
    assert after["api_call_count"] == before["api_call_count"] + 1
    assert after["estimated_calls"] == 1
    stopped = usage_events(harness)[-1]
    assert stopped.estimated and stopped.purpose == CallPurpose.TURN
    # The prompt: the last figure the server gave, scaled to this request; the output: what
    # streamed before the stop (about 4 characters a token).
    assert stopped.input_tokens >= expected_prompt > 0
    streamed = len(result.text)
    assert stopped.output_tokens == -(-streamed // 4)
    assert after["input_tokens"] == before["input_tokens"] + stopped.input_tokens
    assert [r[3] for r in usage_rows(harness, sid)] == [1]


def test_a_call_dropped_mid_stream_and_retried_counts_both_attempts(harness):
    dropped = {"text": "partial answer " * 10, "chunk_size": 5, "drop_after": 6}
    agent = start(harness, [dropped, {"text": "the full answer"}])
    result = agent.run_turn("go")
    assert result.status == "ok" and result.text == "the full answer"
    row = session_row(harness, result.session_id)
    assert (row["api_call_count"], row["estimated_calls"]) == (2, 1)
    first, second = usage_events(harness)
    assert first.estimated and not second.estimated
    # The estimate is announced before the retry starts over.
    kinds = [type(e) for e in harness.events]
    assert kinds.index(ev.UsageUpdated) < kinds.index(ev.Retrying)


def test_a_call_refused_with_an_error_status_is_not_a_billed_call(harness):
    agent = start(harness, [{"status": 400, "error_message": "bad request"}])
    result = agent.run_turn("go")
    assert result.status == "error"
    row = session_row(harness, result.session_id)
    assert (row["api_call_count"], row["estimated_calls"]) == (0, 0)
    assert usage_events(harness) == []


def test_a_summary_cut_short_by_a_stop_is_accounted_by_estimate(harness):
    held = summary_reply(gate="hold", gate_after=3, chunk_size=5)
    agent = start(harness, [held, *turns(4)], compression={"idle_timeout_seconds": 10})
    sid = seed(agent, 4)
    before = session_row(harness, sid)

    def stop_on_progress(event):
        harness.events.append(event)
        if isinstance(event, ev.CompactionProgress):
            agent.stop()

    agent.sink = stop_on_progress
    result = agent.compact()
    harness.server.open_gate("hold")
    agent.compressor.helper.join(5)
    assert result.reason == "cancelled"
    summary = usage_events(harness)[-1]
    assert summary.purpose == CallPurpose.SUMMARY and summary.estimated
    assert summary.input_tokens > 0 and summary.output_tokens > 0
    after = session_row(harness, sid)
    assert after["api_call_count"] == before["api_call_count"] + 1
    assert after["estimated_calls"] == 1
