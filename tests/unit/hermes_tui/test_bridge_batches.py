"""The bridge's batches: adjacent deltas of one kind merge, everything keeps its order."""

from __future__ import annotations

import random

from agent import events as ev
from hermes_tui.bridge import Bridge


class QuietApp:
    """Stands in for the app: the flush it would schedule is driven by the test."""

    def __init__(self) -> None:
        self.scheduled = 0

    def call_later(self, _callback) -> None:
        self.scheduled += 1


def merged(events: list[ev.AgentEvent]) -> list[ev.AgentEvent]:
    """What a batch should hold: runs of the same delta kind joined, all else as sent."""
    out: list[ev.AgentEvent] = []
    for event in events:
        if (
            out
            and type(event) in (ev.TextDelta, ev.ReasoningDelta)
            and type(out[-1]) is type(event)
        ):
            out[-1] = type(event)(out[-1].text + event.text)
        else:
            out.append(event)
    return out


def test_runs_merge_and_order_holds():
    bridge = Bridge(QuietApp())
    sent = [
        ev.TextDelta("a"),
        ev.TextDelta("b"),
        ev.ReasoningDelta("x"),
        ev.ReasoningDelta("y"),
        ev.TextDelta("c"),
        ev.Notice("n", "info"),
        ev.TextDelta("d"),
    ]
    for event in sent:
        bridge(event)
    assert bridge.drain() == [
        ev.TextDelta("ab"),
        ev.ReasoningDelta("xy"),
        ev.TextDelta("c"),
        ev.Notice("n", "info"),
        ev.TextDelta("d"),
    ]
    assert bridge.drain() == []


def test_random_streams_cut_into_random_batches_lose_and_reorder_nothing():
    rng = random.Random(11)
    kinds = [ev.TextDelta, ev.ReasoningDelta, lambda t: ev.Notice(t, "info")]
    for _ in range(200):
        app = QuietApp()
        bridge = Bridge(app)
        sent, batches = [], []
        for i in range(rng.randrange(1, 60)):
            event = rng.choice(kinds)(f"{i},")
            sent.append(event)
            bridge(event)
            if rng.random() < 0.2:
                batches.append(bridge.drain())
        batches.append(bridge.drain())
        for batch in batches:
            assert batch == merged(batch)  # nothing left unmerged within a batch
        flattened = [event for batch in batches for event in batch]
        assert merged(flattened) == merged(sent)
        # One flush is scheduled per batch that got events, never one per event.
        assert app.scheduled <= sum(1 for batch in batches if batch)
