"""Spend caps ($2): a call that would pass the turn, session or day cap is not sent (the
scripted server's request log shows it), the turn says which cap and the spend, the 80 %
warning shows once, a raised cap lets the session go on, and a large request asks first."""

from __future__ import annotations

import sqlite3

import pytest

from agent import events as ev
from agent.kinds import ErrorKind, TurnStatus

# $100 per million tokens, input and output alike: 10,000 tokens are $1.00.
PRICING = {"test-model": {"input": 100.0, "output": 100.0}}
DOLLAR = {"input_tokens": 10_000, "output_tokens": 0}
"""A reply's usage that costs exactly $1.00."""


def start(harness, replies, budget, **config):
    return harness.start(
        {"replies": replies},
        provider={"pricing": PRICING, "context_window": 1_000_000},
        budget=budget,
        **config,
    )


def answer(text="fine", usage=None):
    return {"text": text, "usage": usage or DOLLAR}


def tool_round(usage=None):
    call = {"name": "list_files", "arguments": {"path": "."}}
    return {"tool_calls": [call], "usage": usage or DOLLAR}


def notices(harness) -> list[str]:
    return [e.text for e in harness.events if isinstance(e, ev.Notice)]


def seed_day(home, cost: float, day: str = "now") -> None:
    """Spend another session made on `day` ("now": today, else an SQLite date modifier)."""
    conn = sqlite3.connect(home / "state.db")
    with conn:
        modifier = "" if day == "now" else f", '{day}'"
        conn.execute(
            "INSERT INTO usage_by_day (day, session_id, model, provider, route,"
            f" estimated_cost_usd) VALUES (date('now', 'localtime'{modifier}), ?, 'm', 'p', '', ?)",
            (f"other-{day}", cost),
        )
    conn.close()


def test_the_session_cap_stops_the_call_that_would_pass_it(harness):
    """$2: the session cap holds before the call is sent; the message comes back."""
    agent = start(harness, [answer(), answer()], {"session": 1.05})
    assert agent.run_turn("first").status == TurnStatus.OK
    result = agent.run_turn("second")
    assert len(harness.server.requests) == 1  # the second call was never sent
    assert result.status == TurnStatus.CAPPED and result.error_kind == ErrorKind.SPEND_CAP
    assert result.error.startswith("Stopped: this call (~$1.0")
    assert "would pass the session cap of $1.05 (spent $1.00)" in result.error
    assert "/budget session" in result.error
    assert result.withheld == "second"  # offered back, never merged into a later request
    errors = [e for e in harness.events if isinstance(e, ev.TurnError)]
    assert errors[-1].message == result.error


def test_the_turn_cap_stops_a_tool_round_and_the_next_turn_starts_afresh(harness):
    """$2: the turn cap counts this turn's calls only."""
    agent = start(harness, [tool_round(), answer(), answer()], {"turn": 1.5})
    result = agent.run_turn("list them")
    assert len(harness.server.requests) == 1  # the call after the tool round was not sent
    assert result.status == TurnStatus.CAPPED
    assert "the turn cap of $1.50 (spent $1.00)" in result.error
    assert agent.run_turn("again").status == TurnStatus.OK  # a new turn: $0 spent in it
    assert len(harness.server.requests) == 2


def test_the_day_cap_counts_every_session_today_from_the_database(harness):
    """$2: the day cap sums today's spend across sessions; yesterday's does not count."""
    agent = start(harness, [answer(), answer()], {"day": 2.01})
    seed_day(harness.home, 100.0, "-1 day")
    assert agent.run_turn("first").status == TurnStatus.OK  # yesterday's $100 is not today
    seed_day(harness.home, 1.0)  # another session spent $1.00 today meanwhile
    other = harness.agent()
    result = other.run_turn("in another session")
    assert len(harness.server.requests) == 1
    assert result.status == TurnStatus.CAPPED
    assert "the day cap of $2.01 (spent $2.00)" in result.error


def test_a_raised_cap_lets_the_session_go_on(harness):
    """$2: /budget raises the session cap for this session; the next call is sent."""
    agent = start(harness, [answer(), answer("second answer")], {"session": 1.05})
    agent.run_turn("first")
    assert agent.run_turn("second").status == TurnStatus.CAPPED
    agent.usage_recorder.budget.raise_cap("session", 5.0)
    result = agent.run_turn("second")
    assert result.status == TurnStatus.OK and result.text == "second answer"
    assert len(harness.server.requests) == 2
    agent.new_session()  # the raise was for that session alone
    assert agent.usage_recorder.budget.cap("session") == 1.05


def test_the_80_percent_warning_shows_once_per_cap(harness):
    """$2: at 80 % of a cap a warning shows, once a session."""
    cents = {"input_tokens": 0, "output_tokens": 500}  # $0.05
    replies = [answer(usage={"input_tokens": 0, "output_tokens": 8_500}), answer(usage=cents)]
    agent = start(harness, replies, {"session": 1.0})
    agent.run_turn("first")
    warned = [n for n in notices(harness) if "of the session cap" in n]
    assert warned == [
        "Spent $0.85 of the session cap of $1.00 (85 %); a call that would pass it is not sent."
    ]
    agent.run_turn("second")  # $0.90 now: past 80 % still, told already
    assert [n for n in notices(harness) if "of the session cap" in n] == warned


def test_a_cap_on_a_model_without_a_price_says_it_cannot_hold(harness):
    """$2: without a price no cap can hold; the user is told once, the call is sent."""
    agent = harness.start({"replies": [answer(), answer()]}, budget={"session": 0.01})
    agent.run_turn("first")
    agent.run_turn("second")
    assert len(harness.server.requests) == 2
    told = [n for n in notices(harness) if "cannot hold" in n]
    assert len(told) == 1 and "providers.scripted.pricing" in told[0]


@pytest.mark.parametrize("answer_yes", [True, False])
def test_a_large_request_asks_once_before_it_is_sent(harness, answer_yes):
    """$2: a request over `budget.ask_above_tokens` asks with its size and cost first."""
    asked = []

    def approve(request):
        asked.append(request)
        return answer_yes

    harness.start(
        # The tool round's usage is the server's own count: near the estimate that asked.
        {"replies": [tool_round({"output_tokens": 5}), answer("done")]},
        provider={"pricing": PRICING, "context_window": 1_000_000},
        budget={"ask_above_tokens": 2_000},
    )
    agent = harness.agent(approve=approve)
    result = agent.run_turn("read this " + "log line\n" * 2_000)
    assert len(asked) == 1  # the tool round's next call is not asked about again
    assert asked[0].tool == "large_request"
    assert asked[0].summary.startswith("Send a request of ")
    assert " tokens (~$0." in asked[0].summary
    if answer_yes:
        assert result.status == TurnStatus.OK
        assert len(harness.server.requests) == 2
    else:
        assert result.status == TurnStatus.CAPPED
        assert result.error.startswith("Not sent: the request is ")
        assert harness.server.requests == []


def test_a_summary_call_is_held_to_the_caps(harness):
    """$2: /compact's summary call is a call like any: over a cap it is not sent."""
    replies = [answer() for _ in range(6)]
    agent = start(harness, replies, {}, compression={"keep_recent": 2})
    for i in range(5):
        assert agent.run_turn(f"question {i}").status == TurnStatus.OK
    sent = len(harness.server.requests)
    agent.usage_recorder.budget.raise_cap("turn", 0.000001)
    result = agent.compact()
    assert not result.ok and result.reason == "budget"
    assert result.message.startswith("Stopped: this call")
    assert len(harness.server.requests) == sent


def test_an_automatic_compaction_over_a_cap_stops_its_turn_saying_it_once(harness):
    """$2: the summary call of an automatic compaction is held too, and its turn stops with
    the one sentence, even when the turn's own call would still fit under the cap."""
    from test_compaction import arm_auto, seed, summary_reply, turns
    from test_compaction import start as start_compacting

    # The server counts each prompt as one token: the turn's next call is projected from
    # that count (small), the summary's from its whole transcript (no count applies to it).
    tiny = {"input_tokens": 1, "output_tokens": 1}
    replies = [summary_reply(), *({**t, "usage": tiny} for t in turns(5))]
    agent = start_compacting(harness, replies, provider={"pricing": PRICING})
    seed(agent, 4)
    sent = len(harness.server.requests)
    agent.usage_recorder.budget.raise_cap("turn", 0.015)  # the summary ~$0.024, the turn ~$0.01
    arm_auto(agent)
    result = agent.run_turn("question 4")
    assert len(harness.server.requests) == sent  # neither the summary nor the turn's call
    assert result.status == TurnStatus.CAPPED
    assert result.error.startswith("Stopped: this call") and "turn cap" in result.error
    finished = [e for e in harness.events if isinstance(e, ev.CompactionFinished)]
    assert finished[-1].message == ""  # the turn's TurnError says it, once
    assert agent.compressor.cooldown_state() is None  # a cap is no failure to back off from


def test_a_subagent_s_call_is_held_to_its_parent_session_s_cap(harness):
    """$2, G1: a subagent's calls are billed to the user's session, so they are held to its
    caps: the subagent's call that would pass the session cap is not sent (its own, fresh
    totals would have let it through), and the parent's turn stops on the cap too."""
    child = {"system_contains": "You were started by another agent"}
    task = {"id": "t1", "name": "task", "arguments": {"prompt": "Look around."}}
    replies = [
        {"match": child, "text": "the child's answer", "usage": DOLLAR},
        {"tool_calls": [task], "usage": DOLLAR},
        answer(),
    ]
    agent = start(harness, replies, {"session": 1.01})
    result = agent.run_turn("delegate it")
    assert len(harness.server.requests) == 1  # the parent's first call; nothing after it
    assert result.status == TurnStatus.CAPPED
    assert "the session cap of $1.01 (spent $1.00)" in result.error
