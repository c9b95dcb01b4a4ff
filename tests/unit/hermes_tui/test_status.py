"""The status presenter's pieces on their own: the stall watchdog and the turn state (L2, L3)."""

from __future__ import annotations

import logging

from agent import events as ev
from hermes_tui.durations import format_duration
from hermes_tui.status import StallWatchdog, TurnState


def test_watchdog_warns_once_per_episode_and_clears(caplog):
    dog = StallWatchdog(timeout=300)
    with caplog.at_level(logging.WARNING, logger="hermes_tui.liveness"):
        assert dog.check(busy=True, waiting=1, idle_for=299) is None
        assert dog.check(busy=True, waiting=1, idle_for=300) == "warn"
        assert dog.check(busy=True, waiting=1, idle_for=400) is None
        assert dog.check(busy=True, waiting=1, idle_for=0) == "clear"
        assert dog.check(busy=True, waiting=1, idle_for=301) == "warn"
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2
    assert "5 min" in dog.message(300)


def test_watchdog_is_silent_without_waiting_input_or_when_idle():
    dog = StallWatchdog(timeout=1)
    assert dog.check(busy=True, waiting=0, idle_for=999) is None
    assert dog.check(busy=False, waiting=3, idle_for=999) is None


def test_turn_state_describes_each_phase():
    state = TurnState()
    state.apply(ev.TurnStarted("s", "hi"), 0.0)
    assert state.describe(0.5).startswith("waiting for the first token")
    state.apply(ev.ReasoningDelta("hm"), 1.0)
    assert state.describe(1.5).startswith("thinking")
    state.apply(ev.TextDelta("ok"), 2.0)
    assert state.describe(2.5).startswith("writing")
    assert state.describe(12.0) == "stream silent for 10 s"
    state.apply(ev.ToolStarted("c", "run_shell", {}, "run_shell ls"), 13.0)
    assert state.describe(20.0) == "running tool run_shell (7 s)"
    state.apply(ev.Retrying(2, 5, 4.0, "x"), 21.0)
    assert state.describe(21.0) == "retrying (1/4) in 4 s"  # the first retry is 1
    state.apply(ev.CompactionStarted(), 22.0)
    assert state.describe(25.0) == "compacting (3 s)"
    state.apply(ev.TurnFinished("ok", ""), 30.0)
    assert state.describe(31.0) == "idle"


def test_a_tools_running_time_starts_after_the_users_answer():
    state = TurnState()
    state.apply(ev.TurnStarted("s", "hi"), 0.0)
    state.apply(ev.ToolStarted("c", "run_shell", {}, "run_shell ls"), 1.0)
    state.apply(ev.ToolAwaitingApproval("c", "run_shell"), 1.0)
    state.apply(ev.ToolApprovalAnswered("c", True, 99.0), 100.0)
    assert state.describe(103.0) == "running tool run_shell (3 s)"


def test_one_duration_format_for_clocks_and_one_for_a_tools_own_time():
    assert [format_duration(s) for s in (0.4, 12, 300, 3900)] == [
        "0 s",
        "12 s",
        "5 min",
        "1 h 5 min",
    ]
    assert [format_duration(s, tenths=True) for s in (0.04, 12.34, 125)] == [
        "0.0s",
        "12.3s",
        "2m05s",
    ]
