"""Switching sessions leaves nothing of the old one alive (Z2, U5): its widgets and the lines
they rendered die with it, so each full collection scans what the screen holds, not every
session ever opened."""

from __future__ import annotations

import gc
import weakref

from ui.tui_helpers import type_keys
from waits import wait_until

from bench._long_answers import long_answer
from hermes_tui.widgets.live_answer import LiveLazyAnswer


async def seed(app, answers: int, title: str) -> str:
    """A stored session of questions, each answered by a 300-line Markdown answer."""
    session = await app.db.create_session(
        model="demo-model", provider="demo", workspace=str(app.workspace), title=title
    )
    for i in range(answers):
        await app.db.add_message(session["id"], {"role": "user", "content": f"question {i}?"})
        await app.db.add_message(session["id"], {"role": "assistant", "content": long_answer(i)})
    return session["id"]


async def opened(app, pilot, session_id: str) -> None:
    await app.resume_session(session_id)
    await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
    await app.screen.wait_for_refresh()
    await pilot.pause()


async def test_a_session_switched_away_from_leaves_no_widget_or_line_alive(make_app):
    """Z2: open a session of long answers, switch to others a few times, collect: every
    widget of the first one and every styles cache that held its rendered lines is gone
    (an lru_cache keyed on the styles cache kept up to 1,024 of them, lines and all)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        first = await seed(app, 2, "first")
        other = await seed(app, 1, "other")
        await opened(app, pilot, first)
        widgets = list(app.transcript.walk_children())
        assert len(widgets) > 20, "the first session should paint Markdown blocks"
        caches = [weakref.ref(w._styles_cache) for w in widgets]
        refs = [weakref.ref(w) for w in widgets]
        del widgets
        for _ in range(3):
            await opened(app, pilot, other)
            await app.run_command("/new")
            await pilot.pause()
        gc.collect()
        alive = [r() for r in refs if r() is not None]
        assert not alive, f"{len(alive)} widgets of the first session alive: {alive[:3]}"
        pinned = sum(1 for r in caches if r() is not None)
        assert not pinned, (
            f"{pinned} of {len(caches)} styles caches of the first session alive: fix "
            "textual_compat.styles_caches_die_with_their_widgets"
        )


async def test_a_resume_builds_with_no_collection_and_collects_once_at_idle(make_app):
    """Z2: from the resume until its view is built not one collection runs (a full one
    freeing the old session's widgets cost a few hundred milliseconds of most long opens);
    once the app is idle one full collection frees what the resume left, and the collector
    runs as usual again. Keys typed meanwhile all reach the composer (Z1)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        first = await seed(app, 2, "first")
        other = await seed(app, 2, "other")
        await opened(app, pilot, first)
        await wait_until(pilot, lambda: not app.gc_pacing.held, what="the first catch-up")
        collections: list[int] = []

        def count(phase: str, info: dict) -> None:
            if phase == "start":
                collections.append(info["generation"])

        # The idle second waits for the test: on a loaded machine it passed before the test
        # looked, and the catch-up it then saw was not a collection of the resume's.
        app.probes.gc_idle_delay = 3600.0
        gc.callbacks.append(count)
        try:
            await opened(app, pilot, other)
            during = list(collections)
            assert during == [], f"collections while the resume built (generations): {during}"
            assert app.gc_pacing.held and not gc.isenabled()
            catch_ups = app.gc_pacing.catch_ups
            await type_keys(pilot, *"typed")  # Z1: keys around the catch-up reach the composer
            app.probes.gc_idle_delay = 0.01
            app.gc_pacing.settle()  # the idle from now on
            await wait_until(pilot, lambda: not app.gc_pacing.held, what="the catch-up at idle")
            await type_keys(pilot, *" on")
        finally:
            gc.callbacks.remove(count)
        assert collections[len(during) :][:1] == [2], "the catch-up is one full collection"
        assert app.gc_pacing.catch_ups == catch_ups + 1
        assert gc.isenabled()
        await wait_until(pilot, lambda: app.composer.text == "typed on", what="the typed text")


async def test_a_streamed_long_answer_runs_no_collection_until_idle(make_app, scripted):
    """Z2: a 100 KB answer streams in (past the hand-over to the chunked answer) with no
    collection at all: the full ones its Markdown blocks triggered landed mid-stream. Once the
    app is idle one catch-up runs and the collector is on again."""
    text = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 14 for i in range(260))
    server = scripted({"replies": [{"text": text, "chunk_size": 64}]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        collections: list[int] = []

        def count(phase: str, info: dict) -> None:
            if phase == "start":
                collections.append(info["generation"])

        app.probes.gc_idle_delay = 3600.0  # the idle waits for the test to look (see above)
        gc.callbacks.append(count)
        try:
            catch_ups = app.gc_pacing.catch_ups
            await app.submit("go")
            await app.wait_for_turn()
            during = list(collections)
            assert app.gc_pacing.held
            app.probes.gc_idle_delay = 0.01
            app.gc_pacing.settle()  # the idle from now on
            await wait_until(pilot, lambda: not app.gc_pacing.held, what="the catch-up at idle")
        finally:
            gc.callbacks.remove(count)
        assert during == [], f"collections while the answer streamed: {len(during)}"
        assert app.gc_pacing.catch_ups == catch_ups + 1
        assert gc.isenabled()
        (answer,) = app.transcript.query(LiveLazyAnswer)  # it passed the hand-over
        assert answer.source == text
