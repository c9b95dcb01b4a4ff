"""Bounds on the tool calls of one streamed reply: how many, and how large their arguments.

A hostile or degenerate model can stream thousands of tool calls or megabytes of arguments;
each would be held in memory, stored and sent back on every later request. A reply over a
bound ends that attempt as malformed (SPEC H6, W11), with a sentence naming the bound.
"""

from __future__ import annotations

from agent.providers.base import ToolCallPart

MAX_TOOL_CALLS_PER_REPLY = 128
MAX_TOOL_ARGUMENT_BYTES = 1024 * 1024  # per call, as UTF-8


class ToolCallBounds:
    """Counts one reply's tool calls and argument bytes as their pieces stream in."""

    def __init__(self) -> None:
        self._sizes: dict[int, int] = {}

    def over(self, part: ToolCallPart) -> str | None:
        """What `part` takes past a bound, as words for the error, or None while within."""
        index, arguments = part.index, part.arguments
        if type(index) is not int or not isinstance(arguments, str):
            return "a tool call without a numeric index or with arguments that are not text"
        # Most pieces are ASCII, whose length is their UTF-8 size (isascii() is O(1)).
        size = len(arguments) if arguments.isascii() else len(arguments.encode("utf-8", "replace"))
        total = self._sizes.get(index)
        if total is None:
            if len(self._sizes) >= MAX_TOOL_CALLS_PER_REPLY:
                return f"more than {MAX_TOOL_CALLS_PER_REPLY} tool calls in one reply"
            total = 0
        total += size
        self._sizes[index] = total
        if total > MAX_TOOL_ARGUMENT_BYTES:
            return f"tool call arguments over {MAX_TOOL_ARGUMENT_BYTES // (1024 * 1024)} MB"
        return None
