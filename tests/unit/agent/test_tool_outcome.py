"""A tool call's outcome, decided in one place for the kept result, the live event and a
stored row (agent/kinds.py ToolOutcome; D1: the outcome lives in display metadata)."""

from __future__ import annotations

from agent import events as ev
from agent.kinds import ToolOutcome


def test_a_no_is_declined_whatever_ok_says():
    assert ToolOutcome.of(True) == "ok"
    assert ToolOutcome.of(False) == "error"
    assert ToolOutcome.of(False, declined=True) == "declined"


def test_the_live_event_and_the_stored_row_agree():
    event = ev.ToolFinished("c1", "write_file", False, "no", 0.0, declined=True)
    stored = {"ok": False, "outcome": "declined", "duration": 0.0}
    assert event.outcome == ToolOutcome.recorded(stored) == ToolOutcome.DECLINED
    assert ToolOutcome.recorded({"ok": True, "outcome": "ok"}) == ToolOutcome.OK
    assert ToolOutcome.recorded({"ok": False}) == ToolOutcome.ERROR


def test_a_row_kept_before_outcomes_records_none():
    assert ToolOutcome.recorded(None) is None
    assert ToolOutcome.recorded({}) is None
    assert ToolOutcome.recorded("not a dict") is None
