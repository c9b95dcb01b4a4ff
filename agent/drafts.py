"""One model call's output as it streams in: text, tool-call drafts, signed thinking, finish."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.messages import ThinkingBlock, ToolCall, ToolCallIds
from agent.providers.base import ToolCallPart, UsagePart


@dataclass(slots=True)
class ToolCallDraft:
    """A tool call still streaming: the first piece of its index brings id and name."""

    id: str | None
    name: str | None
    arguments: list[str] = field(default_factory=list)


@dataclass
class Draft:
    """One model call's output as it streams in."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, ToolCallDraft] = field(default_factory=dict)
    thinking: list[ThinkingBlock] = field(default_factory=list)
    finish: str | None = None
    usage: UsagePart | None = None
    produced: bool = False
    """True once anything visible streamed (text, reasoning or a tool call)."""
    reasoning_chars: int = 0
    """How much reasoning streamed: a count for the output estimate, never the text (R1)."""
    text_chars: int = 0
    """How much answer text streamed (the answer bound counts it)."""
    capped: str = ""
    """The sentence naming the bound when the call was cut at `agent.max_answer_mb` (H10)."""

    @property
    def visible_text(self) -> str:
        """The answer text streamed so far (never reasoning)."""
        return "".join(self.text)

    @property
    def reasoned(self) -> bool:
        """True when the model streamed reasoning (or a signed thinking block)."""
        return self.reasoning_chars > 0 or bool(self.thinking)

    @property
    def streamed_chars(self) -> int:
        """Characters of output streamed so far: text, reasoning and tool-call arguments."""
        calls = sum(len(c.name or "") + sum(map(len, c.arguments)) for c in self.calls.values())
        return sum(map(len, self.text)) + self.reasoning_chars + calls

    def add_call_part(self, part: ToolCallPart) -> bool:
        """Add a tool-call piece; True when it opened a new call."""
        draft = self.calls.get(part.index)
        opened = draft is None
        if draft is None:
            self.calls[part.index] = draft = ToolCallDraft(part.id, part.name)
            self.produced = True
        else:
            draft.id = draft.id or part.id
            draft.name = draft.name or part.name
        draft.arguments.append(part.arguments)
        return opened

    def tool_calls(self, ids: ToolCallIds) -> list[ToolCall]:
        """The finished calls in stream order, their ids made unique in the session (A3)."""
        calls = []
        for position, index in enumerate(sorted(self.calls)):
            draft = self.calls[index]
            arguments = "".join(draft.arguments)
            call_id = ids.claim(draft.id, draft.name or "", arguments, position)
            calls.append(ToolCall(call_id, draft.name or "unknown_tool", arguments))
        return calls
