"""The tool loop around an approval: the wait is announced, left out of the duration, a no
is stored as declined with the user's reason, and "always" lasts for the session only (H2)."""

from __future__ import annotations

import time

import pytest

import agent.tool_batch
from agent import events as ev
from agent.tools.approvals import Verdict

THINK_SECONDS = 100.0
"""How long the user appears to think: the loop's clock jumps by this while it asks."""


def shell(command, call_id="c1"):
    """A reply with one run_shell call."""
    return {"tool_calls": [{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]}


class ThinkingClock:
    """The loop's `time` module, except that monotonic() jumps when the user "thinks"."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def __getattr__(self, name):
        return getattr(time, name)


@pytest.fixture
def clock(monkeypatch):
    """The loop's clock, which the approvers below move on instead of sleeping."""
    fake = ThinkingClock()
    monkeypatch.setattr(agent.tool_batch, "time", fake)
    return fake


def of(kind, events):
    return [e for e in events if isinstance(e, kind)]


def test_the_wait_is_announced_and_left_out_of_the_duration(harness, clock):
    bot = harness.start({"replies": [shell("true"), {"text": "ok"}]}, agent={"approval": "ask"})

    def approve(_request):
        clock.offset += THINK_SECONDS
        return Verdict(True)

    bot.approve = approve
    assert bot.run_turn("go").status == "ok"
    kinds = [type(e) for e in harness.events]
    started = kinds.index(ev.ToolStarted)
    assert kinds[started : started + 4] == [
        ev.ToolStarted,
        ev.ToolAwaitingApproval,
        ev.ToolApprovalAnswered,
        ev.ToolFinished,
    ]
    [answered] = of(ev.ToolApprovalAnswered, harness.events)
    assert answered.approved and answered.waited >= THINK_SECONDS
    [finished] = of(ev.ToolFinished, harness.events)
    assert finished.ok and not finished.declined
    assert finished.duration < THINK_SECONDS / 2
    [row] = [r for r in harness.rows(bot.session_id) if r["role"] == "tool"]
    meta = row["display_metadata"]
    assert meta["outcome"] == "ok" and meta["duration"] < THINK_SECONDS / 2


def test_a_no_is_stored_as_declined_with_the_reason_the_model_reads(harness, clock):
    bot = harness.start(
        {"replies": [shell("rm -rf build"), {"text": "understood"}]}, agent={"approval": "ask"}
    )

    def approve(_request):
        clock.offset += THINK_SECONDS
        return Verdict(False, reason="use make clean")

    bot.approve = approve
    assert bot.run_turn("clean up").status == "ok"
    [answered] = of(ev.ToolApprovalAnswered, harness.events)
    assert not answered.approved
    [finished] = of(ev.ToolFinished, harness.events)
    assert finished.declined and not finished.ok
    assert finished.duration < THINK_SECONDS / 2
    [row] = [r for r in harness.rows(bot.session_id) if r["role"] == "tool"]
    assert row["display_metadata"]["outcome"] == "declined"
    tool_message = harness.bodies()[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "Their reason: use make clean" in tool_message["content"]


def test_always_lasts_for_the_session_and_asks_nothing_when_it_covers(harness):
    script = {
        "replies": [
            shell("true", "c1"),
            shell("true", "c2"),
            {"text": "one"},
            shell("true", "c3"),
            {"text": "two"},
        ]
    }
    bot = harness.start(script, agent={"approval": "ask"})
    asked = []

    def approve(request):
        asked.append(request.always)
        return Verdict(True, always=True)

    bot.approve = approve
    assert bot.run_turn("first").status == "ok"
    assert len(asked) == 1
    # The covered call never showed "awaiting approval".
    assert [e.call_id for e in of(ev.ToolAwaitingApproval, harness.events)] == ["c1"]
    bot.new_session()
    assert bot.run_turn("second, in a new session").status == "ok"
    assert len(asked) == 2, "a new session starts with nothing remembered"


def test_headless_approvers_that_answer_a_bool_still_work(harness):
    bot = harness.start({"replies": [shell("true"), {"text": "ok"}]}, agent={"approval": "ask"})
    bot.approve = lambda _request: True
    assert bot.run_turn("go").status == "ok"
    [finished] = of(ev.ToolFinished, harness.events)
    assert finished.ok
