"""Z2: an idle app does not redraw for a blinking cursor: the blink rests after the last key."""

from __future__ import annotations

from ui.tui_helpers import type_keys
from waits import wait_until

from hermes_tui.widgets.composer import Composer


async def test_the_cursor_rests_after_the_last_key_and_blinks_again_on_the_next(make_app):
    app = make_app()
    app.probes.cursor_blink = True
    app.probes.blink_rest = 0.3
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        # Each wake is seen as it happens: on a loaded machine the 0.3 s rest can pass
        # before a press or a click returns, and a look after it would find the blink at rest.
        woken: list[bool] = []
        wake = composer.wake_blink

        def seen_waking() -> None:
            wake()
            woken.append(composer.cursor_blink)

        composer.wake_blink = seen_waking  # type: ignore[method-assign]
        await wait_until(pilot, lambda: not composer.cursor_blink, what="the blink at rest")
        rested = len(woken)
        await type_keys(pilot, "a")
        assert woken[rested:] and all(woken), "a key wakes the blink"
        await wait_until(pilot, lambda: not composer.cursor_blink, what="the blink at rest again")
        keyed = len(woken)
        await pilot.click(Composer)
        assert woken[keyed:] and all(woken), "a click wakes it too"
        assert composer.text == "a"


async def test_a_composer_told_not_to_blink_never_starts(make_app):
    app = make_app()  # the test apps never blink (deterministic snapshots)
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        await type_keys(pilot, "a")
        assert not composer.cursor_blink
