"""Helpers for pilot tests: configs, scripted replies, turns and approval dialogs."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import yaml
from textual.pilot import Pilot
from waits import wait_until

FIXED_NOW = 1_750_000_000.0
"""The wall clock the app sees in tests, so relative times in snapshots never move."""
TEST_ARM_SECONDS = 0.05
"""Approval dialogs in tests arm after this quiet time (the app's default is longer)."""


class FakeClock:
    """A monotonic clock that moves only when the test calls `advance`."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds`."""
        self.now += seconds


def write_config(home: Path, base_url: str, **agent: Any) -> None:
    """Point $HERMES_TUI_HOME/config.yaml at a scripted server (providers scripted, other)."""
    # A stated window: the status panel's context bar reads as a percentage in snapshots.
    provider = {"kind": "openai", "base_url": base_url, "api_key": "test", "context_window": 32768}
    config: dict[str, Any] = {
        "model": "scripted:test-model",
        "providers": {"scripted": dict(provider), "other": dict(provider)},
        # The screen is the same on every machine: with or without bubblewrap (X3 has its
        # own tests, tests/security/test_hostile_sandbox.py).
        "sandbox": "off",
    }
    if agent:
        config["agent"] = agent
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def quick_probes(**settings: Any) -> Any:
    """Probes for an app a test builds by hand, as make_app's: no cursor blink, tool
    durations shown as 0.0s, no start-up collection, the demo at once; `settings` add the
    clocks and the like."""
    from hermes_tui.probes import Probes

    quick = {
        "cursor_blink": False,
        "collect_before_freeze": False,
        "demo_delay": 0.0,
        "tool_duration": lambda _seconds: 0.0,  # the agent times tools on the real clock
    }
    return Probes(**{**quick, **settings})


async def run_turn(pilot: Pilot, text: str, timeout: float = 20.0) -> None:
    """Submit `text` as the user would and wait until the turn is on screen."""
    app = pilot.app
    await app.submit(text)
    await app.wait_for_turn(timeout)
    await pilot.pause()


async def settled_screen(pilot: Pilot, timeout: float = 10.0) -> str:
    """The screenshot once the screen has settled: the transcript built and resting at its
    bottom, and two screenshots a frame apart the same.

    A resize or a removed row is laid out over several frames (the transcript's anchor
    scrolls after the layout that moved it), so a screenshot after a fixed number of pauses
    can catch the view a row off under load; this waits for the picture to stop moving.
    """
    app = pilot.app
    transcript = app.transcript
    last: list[str | None] = [None]

    def still() -> bool:
        # A transcript shorter than the view rests at max_scroll_y 0 (its offset may be
        # below 0: the rows sit at the bottom); a longer one rests at its end.
        bottom = transcript.max_scroll_y
        if transcript.filling or (bottom > 0 and transcript.scroll_y != bottom):
            last[0] = None
            return False
        shot = app.export_screenshot()
        same, last[0] = shot == last[0], shot
        return same

    await wait_until(pilot, still, timeout=timeout, what="the screen to settle")
    return app.export_screenshot()


async def type_keys(pilot: Pilot, *keys: str) -> None:
    """Press `keys` as `pilot.press` does, the same Key event for each in order, for less.

    `pilot.press` waits for the process to look idle twice after every key (at least 40 ms
    a key, up to a second while a turn's thread works), so typing a sentence costs seconds.
    Here each key is handled before the next is sent (the app's and the screen's queues are
    drained, as the key reaches the focused widget and its messages their parents), and the
    one idle wait comes after the last key: what follows sees the screen as after a press.
    """
    from textual import events
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    app = pilot.app
    for key in keys:
        if len(key) == 1 and not key.isalnum():
            key = _character_to_key(key)
        original = REPLACED_KEYS.get(key, key)
        try:
            char: str | None = unicodedata.lookup(_get_unicode_name_from_key(original))
        except KeyError:
            char = key if len(key) == 1 else None
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)
        await _handled(pilot)
    await pilot.pause()


async def _handled(pilot: Pilot, rounds: int = 10) -> None:
    """Wait until what is queued now is handled, and what that queued in turn (a bounded
    number of hops: a key goes app -> focused widget -> its parents' handlers)."""
    app = pilot.app
    for _ in range(rounds):
        await pilot._wait_for_screen()
        pumps = [app, *app.screen.walk_children(with_self=True)]
        if all(pump._message_queue.empty() for pump in pumps):
            return


def reply(text: str = "", **extra: Any) -> dict[str, Any]:
    """A scripted reply with fixed usage, so token counters never depend on paths."""
    return {"text": text, "usage": {"input_tokens": 1200, "output_tokens": 80}, **extra}


async def approval_dialog(pilot: Pilot, armed: bool = False, after: Any = None) -> Any:
    """Wait until an approval dialog (not `after`) is on screen, and armed if asked; return it."""
    from hermes_tui.screens.approval import ApprovalScreen

    app = pilot.app

    def shown() -> bool:
        return isinstance(app.screen, ApprovalScreen) and app.screen is not after

    await wait_until(pilot, shown, what="the approval dialog")
    screen = app.screen
    if armed:
        await wait_until(pilot, lambda: screen.armed, what="the dialog to arm")
    return screen


async def answer_approval(pilot: Pilot, key: str, after: Any = None) -> Any:
    """Press `key` in the approval dialog once it is armed, as a deliberate user would."""
    screen = await approval_dialog(pilot, armed=True, after=after)
    await pilot.press(key)
    return screen
