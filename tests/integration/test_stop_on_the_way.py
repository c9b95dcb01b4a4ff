"""A stop that lands before the worker runs the turn it was meant for (Z1, T6)."""

from __future__ import annotations


def test_a_stop_after_the_turn_was_announced_stops_it_before_any_request(harness):
    """Z1: `expect_turn`, then a stop (the user's Esc while the worker starts), then the
    worker's `run_turn`: no request, nothing written, the typed text comes back."""
    agent = harness.start({"replies": [{"text": "never asked"}, {"text": "the next one"}]})
    agent.expect_turn()
    agent.stop()
    result = agent.run_turn("hello")
    assert result.status == "stopped" and result.unsent == "hello"
    assert harness.server.requests == [] and agent.session_id is None
    # The stop was that turn's alone: the next announced turn runs.
    agent.expect_turn()
    assert agent.run_turn("again").status == "ok"
    assert len(harness.server.requests) == 1


def test_a_stop_with_no_turn_on_its_way_does_not_stop_the_next_one(harness):
    """T6: a stop while idle is forgotten by the next turn (headless and tests call
    `run_turn` without announcing it)."""
    agent = harness.start({"replies": [{"text": "answered"}]})
    agent.stop()
    assert agent.run_turn("hello").status == "ok"
