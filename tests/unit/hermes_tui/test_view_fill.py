"""The view fill's timing (Z2): an opened session's fill starts on the refresh it waited for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.geometry import Region

from hermes_tui.widgets.transcript.fill import ViewFill


class FakeTranscript:
    """What ViewFill asks of a transcript: callbacks after a refresh and on its queue."""

    is_attached = True
    children: list[Any] = []
    region = Region(0, 0, 80, 24)
    app = None

    def __init__(self) -> None:
        self.after_refresh: list[Callable[[], Any]] = []
        self.queued: list[Callable[[], Any]] = []
        self.timers: list[FakeTimer] = []

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> FakeTimer:
        timer = FakeTimer(callback)
        self.timers.append(timer)
        return timer

    def call_after_refresh(self, callback: Callable[[], Any]) -> bool:
        self.after_refresh.append(callback)
        return True

    def call_later(self, callback: Callable[[], Any]) -> bool:
        self.queued.append(callback)
        return True

    def refresh_drawn(self) -> None:
        """One refresh: the callbacks waiting for it run."""
        waiting, self.after_refresh = self.after_refresh, []
        for callback in waiting:
            callback()


class FakeTimer:
    def __init__(self, callback: Callable[[], Any]) -> None:
        self.callback = callback
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


async def keep_in_place(change: Any) -> None:
    await change()


def test_an_opened_sessions_fill_starts_on_the_first_refresh():
    """Z2: the fill asked for when a session opens is queued on the refresh that draws the
    first frame, not one refresh later (which cost an idle frame's wait before the build)."""
    transcript = FakeTranscript()
    fill = ViewFill(transcript, keep_in_place)  # type: ignore[arg-type]
    fill.request_after_refresh()
    assert fill.busy and not transcript.queued
    transcript.refresh_drawn()
    assert transcript.queued and not transcript.after_refresh
    assert fill.busy


def test_a_held_fill_asked_for_on_the_first_refresh_waits_for_the_hold():
    """Z2: the resume holds the fill; the first refresh then only records the request, and
    the end of the hold asks for it (after the next refresh, the layout being new)."""
    transcript = FakeTranscript()
    fill = ViewFill(transcript, keep_in_place)  # type: ignore[arg-type]
    with fill.held():
        fill.request_after_refresh()
        transcript.refresh_drawn()
        assert not transcript.queued and fill.busy
    assert transcript.after_refresh and fill.busy
    transcript.refresh_drawn()
    assert transcript.queued


async def test_the_margin_waits_for_its_timer_and_an_emptied_transcript_stops_it():
    """Z2: once an opened session's view holds nothing to build, the screens around it wait
    for the margin's timer; emptying the transcript (another session) stops that timer, and
    the next fills reach the margin again."""
    transcript = FakeTranscript()
    fill = ViewFill(transcript, keep_in_place)  # type: ignore[arg-type]
    fill.request_after_refresh()
    transcript.refresh_drawn()
    await transcript.queued.pop()()  # the view-only fill: nothing in the view to build
    (timer,) = transcript.timers
    assert not timer.stopped and not fill.busy
    fill.reset()
    assert timer.stopped
    fill.request_after_refresh()
    transcript.refresh_drawn()
    fill.reset()  # emptied before its first fill ran: the fill reaches the margin, no timer
    await transcript.queued.pop()()
    assert len(transcript.timers) == 1
