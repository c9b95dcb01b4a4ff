"""A batch of agent events still being shown when the app shuts down ends quietly (Q1).

Textual's shutdown prunes the screens beside the message loop, so a handler that awaits
(mounting a row, refreshing the sessions list) can wake to find its widgets gone. The test
holds one batch until shutdown has pruned the screens, then lets it run.
"""

from __future__ import annotations

import asyncio

from ui.tui_helpers import reply

from agent import events as ev
from hermes_tui.bridge import AgentEvents
from hermes_tui.widgets.status_panel import StatusPanel


async def test_a_batch_that_outlives_the_screens_raises_nothing(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("hi")]})
    app = make_app(server)
    shown = []
    started, pruned = asyncio.Event(), asyncio.Event()
    close_all = app._close_all  # shutdown's step that prunes every screen

    async def close_all_then_tell() -> None:
        await close_all()
        pruned.set()

    app._close_all = close_all_then_tell
    async with app.run_test(size=(120, 40)):
        real_apply = app.router.apply

        async def late_apply(events):
            started.set()
            await asyncio.wait_for(pruned.wait(), 10)
            assert not app.query(StatusPanel)
            shown.append(events)
            await real_apply(events)  # queries the status and sessions panels: both gone

        app.router.apply = late_apply
        app.post_message(AgentEvents([ev.TurnFinished(status="ok", text="hi")]))
        await asyncio.wait_for(started.wait(), 10)  # not pilot.pause(): it waits for the batch
    assert shown, "the held batch never ran"
