"""Where a call's cost comes from ($2), over real HTTP through the real SDKs: the server's own
report (OpenRouter's `usage.cost`), a local server (free, "local"), the user's prices."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.providers.discovery import SERVERS


@pytest.fixture(autouse=True)
def _fresh_answers():
    SERVERS.clear()
    yield
    SERVERS.clear()


def usage_events(harness) -> list[ev.UsageUpdated]:
    return [e for e in harness.events if isinstance(e, ev.UsageUpdated)]


def test_a_cost_the_server_reports_is_the_calls_cost(harness):
    """$2: OpenRouter sends the call's cost in its usage; that is what the session spent."""
    agent = harness.start({"replies": [{"text": "hi", "usage": {"cost": 0.0123}}]})
    assert agent.run_turn("hello").status == "ok"
    usage = usage_events(harness)[-1]
    assert (usage.cost_usd, usage.cost_source) == (pytest.approx(0.0123), "server")
    assert not usage.total_cost_estimated
    sid = agent.session_id
    agent.writer.flush(sid, tokens=True, when="test")
    assert harness.loop.run(harness.db.get_session(sid))["estimated_cost_usd"] == pytest.approx(
        0.0123
    )


def test_the_users_prices_win_over_a_reported_cost(harness):
    """$2: the provider's `pricing:` is what the user pays, whatever the server says."""
    prices = {"pricing": {"test-model": {"input": 1_000_000.0, "output": 0.0}}}
    script = {"replies": [{"text": "hi", "usage": {"input_tokens": 3, "cost": 9.0}}]}
    agent = harness.start(script, provider=prices)
    agent.run_turn("hello")
    usage = usage_events(harness)[-1]
    assert (usage.cost_usd, usage.cost_source) == (pytest.approx(3.0), "config")


def test_a_local_server_costs_nothing_and_says_local(harness):
    """$2: a server discovery recognised (here llama.cpp) is free: cost 0, source "local"."""
    script = {
        "replies": [{"text": "hi"}],
        "server": {"persona": "llama.cpp", "models": ["test-model"], "context_window": 8192},
    }
    agent = harness.start(script)
    assert agent.run_turn("hello").status == "ok"
    usage = usage_events(harness)[-1]
    assert (usage.cost_usd, usage.cost_source, usage.total_cost_usd) == (0.0, "local", 0.0)


def test_a_server_nobody_recognised_has_no_cost(harness):
    """$2: no price, no report, not a known local server: the cost stays unknown."""
    agent = harness.start({"replies": [{"text": "hi"}]})
    agent.run_turn("hello")
    usage = usage_events(harness)[-1]
    assert usage.cost_usd is None and usage.cost_source is None
