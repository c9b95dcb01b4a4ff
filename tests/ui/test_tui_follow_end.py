"""Rows paged in above keep the view in place without taking the transcript off the end it
follows: after a turn with tall diff blocks the answer is in view (X1, U5)."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn


async def test_paging_in_above_keeps_following_the_end(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("\n\n".join(f"line {i}" for i in range(40)))]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await run_turn(pilot, "write a lot")
        transcript = app.transcript

        async def nothing() -> None:
            return None

        assert transcript.is_anchored, "anchored"
        await transcript.window._keep_in_place(nothing)
        await pilot.pause()
        await pilot.pause()
        assert not transcript._anchor_released  # still following the end
