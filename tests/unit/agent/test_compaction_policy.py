"""ContextCompressor policy without a network: planning, ladder, warning, fence."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.compaction import CommitFence, ContextCompressor, plan_cut
from agent.config import CompressionSettings, Config, ProviderConfig
from agent.loop import Agent
from agent.messages import Message, ToolCall
from agent.summary import render_transcript


def conversation() -> list[Message]:
    call = ToolCall("c1", "list_dir", "{}")
    return [
        Message("user", "task"),
        Message("assistant", "", tool_calls=[call]),
        Message("tool", "files", tool_call_id="c1"),
        Message("assistant", "a1"),
        Message("user", "u2"),
        Message("assistant", "", tool_calls=[ToolCall("c2", "list_dir", "{}")]),
        Message("tool", "files", tool_call_id="c2"),
        Message("assistant", "a2"),
        Message("user", "nudge", ephemeral=True),
    ]


def test_cuts_never_split_a_tool_call_from_its_result_and_skip_scaffolding():
    messages = conversation()
    plan = plan_cut(messages, protect_first=1, keep_recent=3)
    # The tail would start at the tool result (index 6): it moves back to the call (5).
    assert (plan.head, plan.tail) == (1, 5)
    assert all(m.role != "tool" for m in messages[plan.tail : plan.tail + 1])
    # D2: ephemeral scaffolding is never summarised as if the user had said it.
    messages.insert(3, Message("user", "SCAFFOLD", ephemeral=True))
    plan = plan_cut(messages, protect_first=1, keep_recent=3)
    assert "SCAFFOLD" not in render_transcript(plan.summarised)
    assert plan_cut(messages[:3], protect_first=1, keep_recent=2) is None  # too short


def test_cooldown_ladder_is_one_method():
    now = [100.0]
    c = ContextCompressor(CompressionSettings(), clock=lambda: now[0])
    assert [c.record_failure("x") for _ in range(4)] == [60.0, 300.0, 900.0, 900.0]
    assert c.blocked_reason() == "cooldown:900"
    now[0] += 900
    assert c.blocked_reason() is None
    c.record_failure("x")
    c.record_success()
    assert c.blocked_reason() is None and c.record_failure("x") == 60.0


@pytest.fixture
def idle_agent(tmp_path):
    provider = ProviderConfig("p", api_key="k", base_url="http://127.0.0.1:9", context_window=4000)
    config = Config(home=tmp_path, model="p:m", providers={"p": provider})
    events: list = []
    agent = Agent(config, sink=events.append, workspace=tmp_path)
    agent.events = events
    return agent


def warnings(agent) -> list[str]:
    return [e.text for e in agent.events if isinstance(e, ev.Notice) and e.level == "warning"]


def test_blocked_warning_once_rearmed_after_success_never_below_threshold(idle_agent):
    agent, c = idle_agent, idle_agent.compressor
    now = [0.0]
    c.clock = lambda: now[0]
    agent.messages = [Message("user", "short")]
    c.record_failure("x")
    assert c.maybe_compact(agent) is None
    assert warnings(agent) == []  # below the threshold: silent even though blocked
    agent.messages = [Message("user", "x" * 40_000)]
    c.maybe_compact(agent)
    c.maybe_compact(agent)
    assert len(warnings(agent)) == 1 and "cooling down" in warnings(agent)[0]
    c.record_success()  # re-armed; blocked again by attempts spent this turn
    c.turn_attempts = agent.config.compression.max_attempts
    c.maybe_compact(agent)
    assert len(warnings(agent)) == 2 and "3 time(s) this turn" in warnings(agent)[1]


def test_fence_commit_and_cancel_exclude_each_other():
    fence = CommitFence()
    assert fence.cancel() is True
    applied = []
    assert fence.commit(lambda: applied.append(1)) is False and applied == []
    fence = CommitFence()
    assert fence.commit(lambda: applied.append(2)) is True
    assert fence.cancel() is False  # the commit won: the result stands
