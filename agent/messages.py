"""The canonical message model, its projection per wire, and tool-call id hygiene (A3)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent import outside_json


@dataclass(slots=True)
class ToolCall:
    """One tool call made by the model: `arguments` is the raw JSON text it streamed."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError (only) when they are not a JSON object
        the app accepts (too deep, NaN, duplicate keys: agent/outside_json.py)."""
        return outside_json.loads_object(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        """The stored form: {id, name, arguments}."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Inverse of `to_dict`."""
        return cls(id=data["id"], name=data["name"], arguments=data.get("arguments", ""))


@dataclass(slots=True)
class ThinkingBlock:
    """A complete, signed Anthropic thinking block, kept in memory within one turn only (A7)."""

    thinking: str
    signature: str
    redacted_data: str = ""


@dataclass(slots=True)
class Message:
    """One message of a conversation, independent of any provider's wire format.

    `thinking` holds signed thinking blocks that Anthropic requires back within a tool loop;
    it is never persisted and is cleared at turn end (R1, A7). `display_kind` marks a row the
    transcript renders but no provider ever sees (D1). `ephemeral` marks scaffolding that is
    sent once and never stored (D2). `withheld` marks a user message whose turn failed before
    any answer: it stays in the history, and no later request carries it (a `request_failed`
    row after it says so, and `mark_withheld` reads that back on resume).
    """

    role: str
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    thinking: list[ThinkingBlock] = field(default_factory=list)
    display_kind: str | None = None
    display_metadata: dict[str, Any] | None = None
    ephemeral: bool = False
    db_id: int | None = None
    withheld: bool = False

    @property
    def is_display(self) -> bool:
        """True for display-only rows that are stripped from every payload."""
        return self.display_kind is not None

    def to_row(self) -> dict[str, Any]:
        """The fields persisted for this message (never thinking, never ephemeral flags)."""
        return {
            "role": self.role,
            "content": self.content,
            "tool_calls": [c.to_dict() for c in self.tool_calls] or None,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "display_kind": self.display_kind,
            "display_metadata": self.display_metadata,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Message:
        """Rebuild a message from a stored row (as returned by SessionDB.load_messages)."""
        calls = row.get("tool_calls") or []
        return cls(
            role=row["role"],
            content=row.get("content") or "",
            tool_calls=[ToolCall.from_dict(c) for c in calls],
            tool_call_id=row.get("tool_call_id"),
            name=row.get("name"),
            display_kind=row.get("display_kind"),
            display_metadata=row.get("display_metadata"),
            db_id=row.get("id"),
        )


REQUEST_FAILED = "request_failed"
"""`display_kind` of the row a failed turn leaves; `display_metadata["withheld"]` counts the
user messages before it that no model answered, so no request sends them again."""

TURN_STOPPED = "turn_stopped"
"""`display_kind` of the row a stopped turn leaves (shown on resume as the live `■ stopped`)."""
TURN_FAILED = "turn_failed"
"""`display_kind` of the row a turn that failed after an answer began leaves
(`display_metadata["error"]`: the sentence the user saw)."""


def model_visible(messages: list[Message]) -> list[Message]:
    """The messages a provider may see: display rows and withheld messages removed (D1)."""
    return [m for m in messages if not m.is_display and not m.withheld]


def mark_withheld(messages: list[Message]) -> None:
    """Flag the user messages each `request_failed` row withholds (stored rows, on resume)."""
    for index, message in enumerate(messages):
        if message.display_kind != REQUEST_FAILED:
            continue
        left = (message.display_metadata or {}).get("withheld", 0)
        for earlier in reversed(messages[:index]):
            if not isinstance(left, int) or left <= 0:
                break
            if earlier.is_display:
                continue
            if earlier.role != "user":
                break
            earlier.withheld = True
            left -= 1


class ToolCallIds:
    """Keeps tool-call ids unique within a session by renaming reuses at ingestion (A3)."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self._taken: set[str] = set(taken or ())

    @classmethod
    def from_history(cls, messages: list[Message]) -> ToolCallIds:
        """Seed the taken set from a session's stored messages."""
        taken = {c.id for m in messages for c in m.tool_calls}
        return cls(taken)

    def claim(self, raw_id: str | None, name: str, arguments: str, position: int) -> str:
        """Return a unique id for a call: the raw id, `<id>_d<n>` on reuse, or a derived one."""
        base = raw_id or derived_call_id(name, arguments, position)
        if base not in self._taken:
            self._taken.add(base)
            return base
        n = 1
        while f"{base}_d{n}" in self._taken:
            n += 1
        unique = f"{base}_d{n}"
        self._taken.add(unique)
        return unique


def derived_call_id(name: str, arguments: str, position: int) -> str:
    """A deterministic id for a call the provider sent without one."""
    digest = hashlib.sha256(f"{name}\0{arguments}\0{position}".encode()).hexdigest()[:16]
    return f"call_{digest}"


def to_openai(messages: list[Message], system: str | None = None) -> list[dict[str, Any]]:
    """Project messages onto the OpenAI chat-completions wire; display rows are stripped."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for m in model_visible(messages):
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in m.tool_calls
                ]
            elif not m.content:
                item["content"] = ""
            out.append(item)
        elif out and out[-1]["role"] == "user" and m.role == "user":
            # Consecutive user turns (a steer after a refused answer) merge so roles alternate.
            out[-1] = {"role": "user", "content": f"{out[-1]['content']}\n\n{m.content}"}
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_anthropic(messages: list[Message]) -> list[dict[str, Any]]:
    """Project messages onto the Anthropic messages wire.

    Tool results become user turns with `tool_result` blocks; consecutive same-role turns are
    merged so roles strictly alternate (T7). Signed thinking blocks go back first in their
    assistant turn (A7); reasoning never becomes text.
    """
    out: list[dict[str, Any]] = []
    for m in model_visible(messages):
        if m.role == "system":
            continue
        if m.role == "tool":
            role = "user"
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            ]
        elif m.role == "assistant":
            role = "assistant"
            blocks = [_thinking_block(t) for t in m.thinking if t.signature or t.redacted_data]
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                try:
                    args = c.parsed_arguments()
                except ValueError:
                    args = {}
                blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": args})
            if not blocks:
                blocks.append({"type": "text", "text": "(no content)"})
        else:
            role = "user"
            blocks = [{"type": "text", "text": m.content or "(empty)"}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _thinking_block(block: ThinkingBlock) -> dict[str, Any]:
    if block.redacted_data:
        return {"type": "redacted_thinking", "data": block.redacted_data}
    return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
