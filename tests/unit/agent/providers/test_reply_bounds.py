"""The bounds on one reply's tool calls: how many, and how large their arguments (H6)."""

from __future__ import annotations

from agent.providers.base import ToolCallPart
from agent.providers.bounds import (
    MAX_TOOL_ARGUMENT_BYTES,
    MAX_TOOL_CALLS_PER_REPLY,
    ToolCallBounds,
)


def part(index, arguments="", id=None, name=None) -> ToolCallPart:
    return ToolCallPart(index, id, name, arguments)


def test_calls_up_to_the_cap_pass_and_one_more_is_refused():
    bounds = ToolCallBounds()
    for index in range(MAX_TOOL_CALLS_PER_REPLY):
        assert bounds.over(part(index, "{}", f"c{index}", "list_dir")) is None
        assert bounds.over(part(index, "")) is None  # more pieces of a known call
    assert (
        bounds.over(part(MAX_TOOL_CALLS_PER_REPLY, "{}")) == "more than 128 tool calls in one reply"
    )


def test_arguments_are_capped_per_call_in_utf8_bytes():
    bounds = ToolCallBounds()
    half = "x" * (MAX_TOOL_ARGUMENT_BYTES // 2)
    assert bounds.over(part(0, half)) is None
    assert bounds.over(part(0, half)) is None
    assert bounds.over(part(1, half)) is None  # each call has its own budget
    assert bounds.over(part(0, "x")) == "tool call arguments over 1 MB"
    wide = ToolCallBounds()
    assert wide.over(part(0, "é" * (MAX_TOOL_ARGUMENT_BYTES // 2))) is None  # 2 bytes each
    assert wide.over(part(0, "é")) == "tool call arguments over 1 MB"


def test_a_piece_that_is_not_a_tool_call_is_refused():
    bounds = ToolCallBounds()
    assert "numeric index" in bounds.over(part([0], "{}"))
    assert "numeric index" in bounds.over(part(True, "{}"))
    assert "not text" in bounds.over(part(0, {"path": "."}))
