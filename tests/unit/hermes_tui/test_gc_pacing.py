"""The collector's pacing around a resume (Z2): off while it builds, one catch-up at idle,
bounded when resumes come back to back, and never resuming a pause that is not its own."""

from __future__ import annotations

import gc

import pytest

from hermes_tui import gc_pacing
from hermes_tui.gc_pacing import GcPacing


class Timers:
    """A schedule the test fires by hand."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, object]] = []

    def __call__(self, delay: float, callback):
        entry = (delay, callback)
        self.pending.append(entry)
        timers = self

        class Handle:
            def stop(self) -> None:
                if entry in timers.pending:
                    timers.pending.remove(entry)

        return Handle()

    def fire(self) -> None:
        due, self.pending = self.pending, []
        for _, callback in due:
            callback()


class Collections:
    """A full collection the test counts, over an allocation count the test moves: a real
    collection scans the whole test process's heap (seconds, late in a suite), and the real
    count moves with every thread of the process (an app's preload thread from an earlier
    test put it over the limit at once). What is asked here is when it collects."""

    def __init__(self) -> None:
        self.runs = 0
        self.allocated = 0

    def __call__(self) -> None:
        self.runs += 1
        self.allocated = 0

    def count(self) -> int:
        return self.allocated


def pacing_of(timers, busy, collections: Collections | None = None, **options) -> GcPacing:
    collections = collections or Collections()
    return GcPacing(timers, busy, collect=collections, count=collections.count, **options)


@pytest.fixture
def collector():
    """The real collector, enabled, and as it was after the test."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_a_resume_holds_the_collector_until_the_idle_catch_up(collector):
    timers, busy = Timers(), [True]
    pacing = pacing_of(timers, lambda: busy[0], delay=lambda: 0.5)
    pacing.hold()
    assert not gc.isenabled() and pacing.held
    pacing.settle()
    assert [delay for delay, _ in timers.pending] == [0.5]
    timers.fire()  # the view is still being built: not idle yet
    assert not gc.isenabled() and pacing.catch_ups == 0 and len(timers.pending) == 1
    busy[0] = False
    timers.fire()
    assert gc.isenabled() and not pacing.held and pacing.catch_ups == 1
    assert not timers.pending


def test_a_new_resume_before_the_idle_postpones_the_catch_up(collector):
    timers = Timers()
    pacing = pacing_of(timers, lambda: False)
    pacing.hold()
    pacing.settle()
    pacing.hold()  # the next resume: its own build must not pay for the last one's garbage
    assert not timers.pending and pacing.catch_ups == 0 and not gc.isenabled()
    pacing.settle()
    timers.fire()
    assert pacing.catch_ups == 1 and gc.isenabled()


def test_back_to_back_resumes_collect_once_the_garbage_passes_the_limit(collector, monkeypatch):
    monkeypatch.setattr(gc_pacing, "HELD_LIMIT", 1_000)
    collections = Collections()
    pacing = pacing_of(Timers(), lambda: False, collections)
    pacing.hold()
    pacing.settle()
    pacing.hold()
    assert pacing.catch_ups == 0  # little allocated since the collector stopped
    collections.allocated += 5_000  # more tracked objects than the limit
    pacing.hold()
    assert pacing.catch_ups == 1 and collections.runs == 1 and not gc.isenabled()
    pacing.hold()
    assert pacing.catch_ups == 1  # counted from the catch-up on, not from the first stop
    pacing.release()
    assert gc.isenabled()


def test_a_pause_that_is_not_its_own_stays(collector):
    timers = Timers()
    pacing = pacing_of(timers, lambda: False)
    gc.disable()  # start-up's pause (startup_gc) is still on
    pacing.hold()
    pacing.settle()
    assert not pacing.held and not timers.pending
    pacing.release()
    assert not gc.isenabled()


def test_a_view_that_keeps_building_still_collects_past_the_limit(collector, monkeypatch):
    monkeypatch.setattr(gc_pacing, "HELD_LIMIT", 1_000)
    timers, collections = Timers(), Collections()
    pacing = pacing_of(timers, lambda: True, collections)  # a long answer streams in
    collections.allocated = 900  # allocated before it stopped: not its own to count
    pacing.hold()
    pacing.settle()
    collections.allocated += 900
    timers.fire()
    assert pacing.held and pacing.catch_ups == 0  # little allocated: it waits on
    collections.allocated += 5_000
    timers.fire()
    assert pacing.catch_ups == 1 and gc.isenabled() and not timers.pending


def test_a_long_turn_held_collects_once_its_garbage_passes_the_bound(collector, monkeypatch):
    monkeypatch.setattr(gc_pacing, "HELD_LIMIT", 1_000)
    collections = Collections()
    pacing = pacing_of(Timers(), lambda: False, collections)
    pacing.bound()  # not held: nothing to do
    assert pacing.catch_ups == 0 and gc.isenabled()
    pacing.hold()
    pacing.bound()  # little piled up yet
    assert pacing.catch_ups == 0
    collections.allocated += 5_000
    pacing.bound()
    assert pacing.catch_ups == 1 and pacing.held and not gc.isenabled()
