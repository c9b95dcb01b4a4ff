"""The live answer's updates are paced to what they cost; a steady status panel never relays
out the screen. Both keep a long streamed answer from hogging the UI thread."""

from __future__ import annotations

import asyncio
import itertools
import random
import time

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from waits import wait_until

from agent import events as ev
from hermes_tui.status import STATUS_STREAM_SECONDS
from hermes_tui.widgets.answer import AnswerBlock, AnswerStream
from hermes_tui.widgets.status_panel import StatusPanel


class AnswerApp(App):
    def compose(self) -> ComposeResult:
        yield AnswerBlock(id="answer")


def recording(answer: AnswerBlock) -> list[str]:
    """Every text the stream hands to the answer, in order."""
    appended: list[str] = []
    original = answer.append

    def append(markdown: str):
        appended.append(markdown)
        return original(markdown)

    answer.append = append  # type: ignore[method-assign]
    return appended


async def test_text_arriving_while_an_update_rests_goes_into_the_next_update():
    app = AnswerApp()
    async with app.run_test() as pilot:
        answer = app.query_one(AnswerBlock)
        appended = recording(answer)
        # Each update "costs" 80 ms of the UI thread, so the stream rests 80 ms after it.
        stream = AnswerStream(answer, cpu_clock=itertools.count(0, 0.08).__next__)
        stream.start()
        await stream.write("one ")
        await wait_until(pilot, lambda: answer.source == "one ")
        await stream.write("two ")
        await asyncio.sleep(0.02)  # a later moment of the same rest (80 ms)
        await stream.write("three")
        await wait_until(pilot, lambda: answer.source == "one two three")
        await stream.stop()
        assert appended == ["one ", "two three"]


def test_the_rest_matches_the_update_cost_up_to_a_cap():
    # The duty is the benchmarked one (bench tmux_stream and ui, Z2's typing while streaming):
    # an update's cost and its rest share the UI thread 3 : 7.
    stream = AnswerStream.__new__(AnswerStream)  # no event loop needed for the arithmetic
    assert stream.rest_after(0.0) == 0.0  # a cheap update never holds the next one back
    assert stream.rest_after(0.003) == pytest.approx(0.007)  # 30 % of the UI thread at most
    assert stream.rest_after(0.030) == pytest.approx(0.070)
    assert stream.rest_after(3.0) == AnswerStream.MAX_PAUSE
    assert stream.rest_after(-1.0) == 0.0  # a clock that went backwards


AT_ONCE = 10.0
"""How soon a stop shows the rest: a third of the shortest rest or repaint wait it must not
wait out (20 s and more below), so a loaded machine cannot fail it and a waiting stop can."""


async def test_stop_shows_everything_written_at_once_even_mid_rest():
    app = AnswerApp()
    async with app.run_test() as pilot:
        answer = app.query_one(AnswerBlock)
        rng = random.Random(7)
        for trial in range(20):
            await answer.update("")
            # Updates cost 20 to 40 s of the (fake) UI thread, so each rest is as long and a
            # stop lands in one: a stop that waited for it would take 20 s at least.
            ticks = itertools.count(0, rng.uniform(20, 40))
            stream = AnswerStream(answer, cpu_clock=ticks.__next__)
            stream.MAX_PAUSE = stream.REFRESH_WAIT = 60.0
            stream.start()
            pieces = [f"{trial}-{i} " for i in range(rng.randrange(1, 30))]
            for piece in pieces:
                await stream.write(piece)
                if rng.random() < 0.3:
                    await pilot.pause(rng.random() / 100)  # a random moment in a rest
            started = asyncio.get_running_loop().time()
            await stream.stop()
            assert asyncio.get_running_loop().time() - started < AT_ONCE
            assert answer.source == "".join(pieces)


class PanelApp(App):
    def compose(self) -> ComposeResult:
        yield StatusPanel(id="status")


async def test_a_status_refresh_that_keeps_the_panels_height_lays_nothing_out(monkeypatch):
    layouts: list[int] = []
    refresh_layout = Screen._refresh_layout
    monkeypatch.setattr(
        Screen,
        "_refresh_layout",
        lambda self, *a, **k: layouts.append(1) or refresh_layout(self, *a, **k),
    )
    app = PanelApp()
    async with app.run_test() as pilot:
        panel = app.query_one(StatusPanel)
        panel.status.state = "streaming"
        panel.status.streamed_tokens = 10
        panel.refresh_status()
        await pilot.pause()
        layouts.clear()
        for tokens in range(20, 400, 20):  # the streamed count moves on every batch
            panel.status.streamed_tokens = tokens
            panel.refresh_status()
            await pilot.pause()
        assert "~380 tokens streamed" in panel.text
        assert layouts == []
        body = app.query_one("#status-body")
        height = body.region.height
        panel.status.hint = "a hint adds two lines"
        panel.refresh_status()
        await pilot.pause()
        assert layouts  # a taller panel still lays the screen out
        assert body.region.height == height + 2


async def test_stop_does_not_wait_for_a_repaint_held_back_by_a_screen_on_top():
    app = AnswerApp()
    async with app.run_test() as pilot:
        answer = app.query_one(AnswerBlock)

        async def never_repainted() -> bool:
            await asyncio.Event().wait()  # as while the help screen covers the transcript
            return True

        answer.wait_for_refresh = never_repainted  # type: ignore[method-assign]
        stream = AnswerStream(answer, cpu_clock=lambda: 0.0)
        stream.REFRESH_WAIT = 60.0  # what a stop that waited for the repaint would take
        stream.start()
        await stream.write("shown ")
        await wait_until(pilot, lambda: answer.source == "shown ")
        await stream.write("at once")
        started = asyncio.get_running_loop().time()
        await stream.stop()
        assert asyncio.get_running_loop().time() - started < AT_ONCE
        assert answer.source == "shown at once"


async def test_streamed_text_redraws_the_status_panel_at_most_ten_times_a_second(
    make_app, monkeypatch
):
    app = make_app()
    async with app.run_test() as pilot:
        await app.ready()
        drawn: list[float] = []  # when each redraw happened
        # The batch path's redraws (the once-a-second tick aside).
        app.probes.status_drawn = lambda: drawn.append(time.monotonic())
        await app.router.apply([ev.RequestStarted(1, "m", "p")])
        assert len(drawn) == 1  # anything but streamed text redraws at once
        await app.router.apply([ev.TextDelta("first ")])
        assert len(drawn) == 2  # the first streamed text is drawn at once, however soon
        started = time.monotonic()
        for _ in range(20):  # a fast stream: a batch per frame
            last_batch = time.monotonic()
            await app.router.apply([ev.TextDelta("more "), ev.ReasoningDelta("hm ")])
        # One redraw per STATUS_STREAM_SECONDS at most (however slow this machine is).
        assert len(drawn) <= 3 + (time.monotonic() - started) // STATUS_STREAM_SECONDS
        # A skipped batch is drawn when the interval ends: the panel never lags behind.
        await wait_until(pilot, lambda: drawn[-1] >= last_batch, what="catch-up")
        count = len(drawn)
        # Time passing with no batch is the subject: nothing may be drawn during it.
        await asyncio.sleep(STATUS_STREAM_SECONDS * 1.5)
        assert len(drawn) == count  # one catch-up at most, not one per skipped batch
        await app.router.apply([ev.TextDelta("later")])
        assert len(drawn) == count + 1  # the interval is over: drawn at once
        before = len(drawn)
        await app.router.apply([ev.TextDelta("x"), ev.UsageUpdated(10, 5, 10, 5, None)])
        assert len(drawn) == before + 1
        await pilot.pause()
