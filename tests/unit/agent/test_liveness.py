"""Liveness pieces on their own: the activity clock and heartbeat, the skew guard (L1, L4)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agent.liveness import ActivityClock, CodeSkewGuard, raised_in_own_code


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
