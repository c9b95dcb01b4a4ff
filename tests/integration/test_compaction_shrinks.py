"""A compaction always shrinks the context or changes nothing (C1, C2, C5), over real HTTP.

The summary request has an output budget from the window and fits the window; a summary cut
off at that budget is asked for once more, shorter, then rejected; a summary commits only
when the next request it projects (the server's own counts where it gave them) is smaller.
"""

from __future__ import annotations

import json

from test_compaction import (
    FILL,
    SUMMARY,
    arm_auto,
    normal_bodies,
    of,
    seed,
    set_window,
    start,
    summary_bodies,
    summary_reply,
    turns,
    view,
)

from agent import events as ev
from agent.summary import summary_budget


def words_asked(body: dict) -> int:
    """The "at most N words" of a summary request's system prompt."""
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    return int(system.rsplit("at most ", 1)[1].split()[0])


def nothing_compacted(harness, sid: str) -> bool:
    return not any(r["compacted"] or r["display_kind"] for r in harness.rows(sid))


def test_the_summary_request_has_a_budget_from_the_window_and_fits_it(harness):
    window = 1600
    agent = start(harness, [*turns(12), summary_reply()], provider={"context_window": window})
    seed(agent, 12)
    assert agent.compact().ok
    (body,) = summary_bodies(harness)
    assert body["max_tokens"] == window // 8  # the span's third is larger here
    # The conversation is bigger than the window: the transcript was cut so that the request
    # (about 4 characters a token, and room for the chat template) plus its budget fits.
    text = "".join(m["content"] for m in body["messages"])
    assert "[...]" in text
    assert len(text) // 4 + body["max_tokens"] <= window - 32


def test_the_budget_is_a_third_of_the_span_when_that_is_smaller():
    assert summary_budget(200_000, 900) == 300
    assert summary_budget(200_000, 90) == 128  # never below the floor
    assert summary_budget(200_000, 10**6) == 2048  # never above the ceiling


def test_a_summary_cut_off_at_its_limit_is_asked_again_shorter(harness):
    cut = {"text": "A summary that rambles on and", "finish_reason": "length"}
    agent = start(harness, [*turns(4), cut, {"text": SUMMARY}, *turns(1)])
    sid = seed(agent, 4)
    result = agent.compact()
    assert result.ok, result.message
    first, second = summary_bodies(harness)
    assert second["max_tokens"] == first["max_tokens"]
    assert words_asked(second) == words_asked(first) // 2
    summary = next(m for m in agent.messages if m.display_metadata and SUMMARY in m.content)
    assert "rambles" not in summary.content
    assert not nothing_compacted(harness, sid)


def test_a_summary_cut_off_twice_is_rejected_and_nothing_changes(harness):
    script = {
        "replies": [*turns(4), {"match": {"system_contains": "You summarise"}, "text": FILL * 9}],
        "honour_max_tokens": True,  # the server stops the summary at its max_tokens
    }
    agent = harness.start(script, compression={"protect_first": 1, "keep_recent": 4}, provider={})
    sid = seed(agent, 4)
    before = view(agent.messages)
    result = agent.compact()
    assert not result.ok and result.reason == "cutoff"
    assert len(summary_bodies(harness)) == 2
    finished = of(harness, ev.CompactionFinished)[-1]
    assert "cut off" in finished.message and "Nothing was dropped" in finished.message
    assert view(agent.messages) == before and nothing_compacted(harness, sid)


def test_a_summary_that_would_not_shrink_the_context_is_not_committed(harness):
    # A model that ignores the budget (the scripted server does not enforce max_tokens here)
    # and writes more than the messages it replaces.
    agent = start(harness, [*turns(4), {"text": "word " * 800}, *turns(1)])
    sid = seed(agent, 4)
    before = view(agent.messages)
    result = agent.compact()
    assert not result.ok and result.reason == "no_shrink"
    finished = of(harness, ev.CompactionFinished)[-1]
    assert "would not make the context smaller" in finished.message
    assert view(agent.messages) == before and nothing_compacted(harness, sid)
    assert agent.compressor.failures == 1  # it counts on the cooldown ladder
    # The next turn sends everything, as before.
    assert agent.run_turn("go on").status == "ok"
    last = json.dumps(normal_bodies(harness)[-1])
    assert all(f"answer {i}" in last for i in range(4))


def test_the_servers_count_of_the_summary_decides(harness):
    # Few characters, but the server counted 5,000 tokens of output: by its count the
    # summary is bigger than what it replaces, so it is not committed.
    agent = start(harness, [*turns(4), summary_reply(usage={"output_tokens": 5000}), *turns(1)])
    sid = seed(agent, 4)
    result = agent.compact()
    assert not result.ok and result.reason == "no_shrink", result.message
    assert "~5000 tokens" in result.message
    assert nothing_compacted(harness, sid)


def test_the_threshold_is_measured_in_the_servers_tokens(harness):
    # The server counts this conversation's prompt at many times our estimate.
    counted = {"text": "answer 4", "usage": {"input_tokens": 40_000}}
    agent = start(harness, [*turns(4), counted, summary_reply(), *turns(1)])
    seed(agent, 4)
    estimate = agent.compressor.measure(agent)[0]
    assert agent.run_turn("question 4").status == "ok"
    assert agent.compressor.measure(agent)[0] > 3 * estimate  # in the server's units now
    # A window our own estimate stays well under, while the server's count passes it.
    set_window(agent, int(2 * estimate / agent.config.compression.threshold))
    assert agent.run_turn("question 5").status == "ok"
    assert of(harness, ev.CompactionFinished) and of(harness, ev.CompactionFinished)[-1].ok


def test_automatic_compaction_commits_a_smaller_request(harness):
    agent = start(harness, [*turns(6), summary_reply(), *turns(2)])
    seed(agent, 6)
    arm_auto(agent)
    assert agent.run_turn("question 6").status == "ok"
    assert of(harness, ev.CompactionFinished)[-1].ok
    prompts = [r for r in harness.server.requests if "You summarise" not in r.raw.decode()]
    before, after = len(prompts[-2].raw), len(prompts[-1].raw)
    assert after < before  # and that with one more question and answer in it
