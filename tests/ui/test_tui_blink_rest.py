"""Z2: an idle app does not redraw for a blinking cursor: the blink rests after the last key."""

from __future__ import annotations

from waits import wait_until

from hermes_tui.widgets.composer import Composer


async def test_the_cursor_rests_after_the_last_key_and_blinks_again_on_the_next(make_app):
    app = make_app()
    app.probes.cursor_blink = True
    app.probes.blink_rest = 0.3
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        await wait_until(pilot, lambda: not composer.cursor_blink, what="the blink at rest")
        await pilot.press("a")
        assert composer.cursor_blink, "a key wakes the blink"
        await wait_until(pilot, lambda: not composer.cursor_blink, what="the blink at rest again")
        await pilot.click(Composer)
        assert composer.cursor_blink, "a click wakes it too"
        assert composer.text == "a"


async def test_a_composer_told_not_to_blink_never_starts(make_app):
    app = make_app()  # the test apps never blink (deterministic snapshots)
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        await pilot.press("a")
        assert not composer.cursor_blink
