"""tests/ui/tui_helpers.py `type_keys`: the keys `pilot.press` sends, for one idle wait."""

from __future__ import annotations

from typing import Any

import pytest
import textual.pilot
from textual import events
from textual.app import App, ComposeResult
from textual.widgets import TextArea
from ui.tui_helpers import type_keys

KEYS = (*"Say: a, b & c!", "backspace", "?", "enter", *"(x_y) #1 ~/.é", "left", "Z")


class Host(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.keys: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        yield TextArea()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):  # every key, as the driver hands it to the app
            self.keys.append((event.key, event.character))
        await super().on_event(event)


async def typed(press: Any) -> tuple[str, list[tuple[str, str | None]]]:
    app = Host()
    async with app.run_test() as pilot:
        await press(pilot, *KEYS)
        return app.query_one(TextArea).text, app.keys


async def test_type_keys_types_what_pilot_press_types():
    by_press = await typed(lambda pilot, *keys: pilot.press(*keys))
    assert by_press[0] == "Say: a, b & c?\n(x_y) #1 ~/.Zé"
    assert ("exclamation_mark", "!") in by_press[1]
    assert await typed(type_keys) == by_press, "the same text, from the same Key events"


async def test_type_keys_waits_for_idle_once_whatever_the_number_of_keys(
    monkeypatch: pytest.MonkeyPatch,
):
    waits = []
    idle = textual.pilot.wait_for_idle

    async def counted(*args: Any, **kwargs: Any) -> None:
        waits.append(args)
        await idle(*args, **kwargs)

    monkeypatch.setattr(textual.pilot, "wait_for_idle", counted)
    monkeypatch.setattr("textual.app.wait_for_idle", counted)
    assert await typed(type_keys)
    assert len(waits) == 1, "one idle wait, after the last key"
