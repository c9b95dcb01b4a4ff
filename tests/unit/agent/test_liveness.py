"""Liveness pieces on their own: clock and heartbeat, watchdog, turn state, skew guard (L1-L4)."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from agent import events as ev
from agent.liveness import (
    ActivityClock,
    CodeSkewGuard,
    StallWatchdog,
    TurnState,
    raised_in_own_code,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_heartbeat_is_throttled():
    clock = FakeClock()
    stamps = []
    activity = ActivityClock(stamps.append, interval=5.0, clock=clock)
    for _ in range(100):  # 100 chunks within one second: one stamp
        clock.now += 0.01
        activity.touch()
    assert len(stamps) == 1
    clock.now += 5.0
    activity.touch()
    assert len(stamps) == 2
    assert activity.idle_for() == 0


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
    assert state.describe(21.0) == "retrying (2/5) in 4 s"
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


def copy_packages(tmp_path: Path) -> Path:
    root = Path(__file__).resolve().parents[3]
    for package in ("agent", "storage"):
        shutil.copytree(
            root / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return tmp_path


def test_skew_guard_notices_changed_code(tmp_path):
    root = copy_packages(tmp_path)
    guard = CodeSkewGuard(root)
    assert guard.skew_message() is None
    version_file = root / "agent" / "version.py"
    version_file.write_text(version_file.read_text().replace(guard.version, "9.9.9"))
    os.utime(version_file, ns=(1, 1))
    message = guard.skew_message()
    expected = f"hermes-tui was upgraded from {guard.version} to 9.9.9 while running"
    assert message == expected + ": restart to continue."


def test_raised_in_own_code():
    from agent.messages import ToolCall

    try:
        ToolCall.from_dict(None)  # raises inside agent/messages.py
    except (AttributeError, TypeError) as exc:
        own = exc
    try:
        None.split()  # raises here, in tests/
    except AttributeError as exc:
        foreign = exc
    assert raised_in_own_code(own)
    assert not raised_in_own_code(foreign)
