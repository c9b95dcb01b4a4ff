"""The first turn's server question is asked while the app waits for Enter (preload.py).

Discovery (agent/server_check.py) used to run on the turn's worker between Enter and the
request: a round trip before the first token. Asked ahead, once, its answer is still the one
the turn's check uses (the model it does not list is warned about at the turn)."""

from __future__ import annotations

from ui.tui_helpers import reply
from waits import wait_until

from hermes_tui.widgets.messages import NoticeLine

PERSONA = {"persona": "vllm", "models": ["x", "y"], "context_window": 4096}


async def test_the_server_is_asked_before_enter_and_not_again_by_the_turns(make_app, scripted):
    server = scripted({"replies": [reply("one"), reply("two")], "server": PERSONA})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await wait_until(
            pilot,
            lambda: app.asking_ahead is not None and not app.asking_ahead.is_alive(),
            what="the question asked ahead",
        )
        asked = len(server.probes)
        assert asked >= 1  # before any Enter: with the fix out, nothing was asked yet
        for text in ("first", "second"):
            await app.submit(text)
            await app.wait_for_turn()
        await pilot.pause()
        assert len(server.probes) == asked  # neither turn asked the server again
        assert len(server.requests) == 2
        warnings = [
            notice.text
            for notice in app.transcript.query(NoticeLine)
            if "does not list model 'test-model'" in notice.text
        ]
        assert len(warnings) == 1  # the answer asked ahead is the one the turn's check used
