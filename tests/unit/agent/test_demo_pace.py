"""The demo model plays the tour at its own pace for a person, and at once when told (tests)."""

from __future__ import annotations

from agent.config import load_config
from agent.demo import start_demo


def _demo_delay(**kw) -> float | None:
    _config, server = start_demo(load_config(demo=True), **kw)
    try:
        return server.script.defaults.get("delay")
    finally:
        server.stop()


def test_the_demo_keeps_its_own_pace_unless_told():
    """A user's demo streams at the tour's pace (demo.yaml); the app's probe can only speed
    it up for a test: the UI suite's demo turns take no 5 s of pacing each."""
    assert _demo_delay() == 0.015
    assert _demo_delay(delay=None) == 0.015
    assert _demo_delay(delay=0.0) == 0.0
