"""The user's bubble is drawn before the turn's thread starts (Z2).

A turn's thread begins with pure-Python work (the history made into a request, sent and
read), and threads share one interpreter: started before the bubble's frame, it slowed it.
"""

from __future__ import annotations

from typing import Any

from ui.tui_helpers import reply, type_keys

from hermes_tui.turns import WORK_GROUP


async def test_the_turn_thread_starts_after_the_bubble_frame_is_drawn(make_app, scripted):
    """Z2: between the bubble's mount and the turn's worker, a frame is drawn (and it laid
    the bubble out): the turn's thread never competes with that frame."""
    server = scripted({"replies": [reply("ok")]})
    app = make_app(server)
    events: list[str] = []
    async with app.run_test() as pilot:
        await app.ready()
        transcript = app.transcript
        add_user = transcript.add_user
        run_worker = app.run_worker

        async def shown(text: str) -> None:
            await add_user(text)
            events.append(f"mounted {text}")
            transcript.call_after_refresh(events.append, f"drawn {text}")

        def started(work: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("group") == WORK_GROUP:
                bubble = transcript.last_user
                laid_out = bubble is not None and bubble.region.height > 0
                events.append(f"thread ({'laid out' if laid_out else 'not laid out'})")
            return run_worker(work, *args, **kwargs)

        transcript.add_user = shown  # type: ignore[method-assign]
        app.run_worker = started  # type: ignore[method-assign]
        for text in ("first", "second"):
            await type_keys(pilot, *text, "enter")
            await app.wait_for_turn()
    assert events == [
        "mounted first",
        "drawn first",
        "thread (laid out)",
        "mounted second",
        "drawn second",
        "thread (laid out)",
    ]
