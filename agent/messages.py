"""The canonical message model, its projection per wire, and tool-call id hygiene (A3)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent import outside_json
from agent.kinds import IMAGES_KEY


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
class ImagePart:
    """An image a message carries to the model: its blob's sha256, what it is, its bytes
    (`data` None until the request builder loads them from the store)."""

    sha256: str
    media_type: str
    name: str
    width: int
    height: int
    size: int
    data: bytes | None = None

    def ref(self) -> dict[str, Any]:
        """The stored reference: everything but the bytes."""
        return {
            "sha256": self.sha256,
            "media_type": self.media_type,
            "name": self.name,
            "width": self.width,
            "height": self.height,
            "bytes": self.size,
        }

    @classmethod
    def from_ref(cls, ref: Any) -> ImagePart | None:
        """Inverse of `ref` (None for a reference that is not one)."""
        if not isinstance(ref, dict) or not isinstance(ref.get("sha256"), str):
            return None
        return cls(
            ref["sha256"],
            str(ref.get("media_type") or "image/png"),
            str(ref.get("name") or "image"),
            int(ref.get("width") or 0),
            int(ref.get("height") or 0),
            int(ref.get("bytes") or 0),
        )

    def base64(self) -> str:
        """The bytes as base64 text (the caller checked that `data` is loaded)."""
        return base64.b64encode(self.data or b"").decode("ascii")

    def missing_note(self) -> str:
        """What the model reads instead of an image whose bytes are gone from the store."""
        return f"[image {self.name}: no longer stored, not shown]"


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
    images: list[ImagePart] = field(default_factory=list)

    @property
    def is_display(self) -> bool:
        """True for display-only rows that are stripped from every payload."""
        return self.display_kind is not None

    def to_row(self) -> dict[str, Any]:
        """The fields persisted for this message (never thinking, never ephemeral flags);
        images as references in the metadata, their bytes as `blobs` (stored once)."""
        row: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "tool_calls": [c.to_dict() for c in self.tool_calls] or None,
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "display_kind": self.display_kind,
            "display_metadata": self.display_metadata,
        }
        if self.images:
            row["display_metadata"] = {
                **(self.display_metadata or {}),
                IMAGES_KEY: [image.ref() for image in self.images],
            }
            row["blobs"] = [
                (image.sha256, image.media_type, image.data)
                for image in self.images
                if image.data is not None
            ]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Message:
        """Rebuild a message from a stored row (as returned by SessionDB.load_messages)."""
        calls = row.get("tool_calls") or []
        meta = row.get("display_metadata")
        refs = meta.get(IMAGES_KEY) if isinstance(meta, dict) else None
        listed = refs if isinstance(refs, list) else ()
        images = [part for part in map(ImagePart.from_ref, listed) if part is not None]
        return cls(
            role=row["role"],
            content=row.get("content") or "",
            tool_calls=[ToolCall.from_dict(c) for c in calls],
            tool_call_id=row.get("tool_call_id"),
            name=row.get("name"),
            display_kind=row.get("display_kind"),
            display_metadata=meta,
            db_id=row.get("id"),
            images=images,
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


TOOL_IMAGES_NOTE = "[the image(s) of this result follow in the next user message]"
"""A chat-completions tool message carries text only: its images go in a user message
right after the batch's results, and the result says so."""


def to_openai(messages: list[Message], system: str | None = None) -> list[dict[str, Any]]:
    """Project messages onto the OpenAI chat-completions wire; display rows are stripped."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    held: list[Message] = []  # tool results with images, sent after the batch's last result
    for m in model_visible(messages):
        if m.role != "tool" and held:
            _add_user(out, _openai_tool_images(held))
            held = []
        if m.role == "tool":
            text = f"{m.content}\n{TOOL_IMAGES_NOTE}" if m.images else m.content
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": text})
            if m.images:
                held.append(m)
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
        elif m.role == "user":
            content: str | list[dict[str, Any]] = m.content
            if m.images:
                content = [{"type": "text", "text": m.content}, *map(_openai_image, m.images)]
            _add_user(out, content)
        else:
            out.append({"role": m.role, "content": m.content})
    if held:
        _add_user(out, _openai_tool_images(held))
    return out


def _add_user(out: list[dict[str, Any]], content: str | list[dict[str, Any]]) -> None:
    """A user message; consecutive user turns (a steer after a refused answer) merge so roles
    alternate, as text while both are text, else as one list of parts."""
    if not (out and out[-1]["role"] == "user"):
        out.append({"role": "user", "content": content})
        return
    before = out[-1]["content"]
    if isinstance(before, str) and isinstance(content, str):
        out[-1] = {"role": "user", "content": f"{before}\n\n{content}"}
        return
    out[-1] = {"role": "user", "content": [*_parts(before), *_parts(content)]}


def _parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _openai_tool_images(results: list[Message]) -> list[dict[str, Any]]:
    """The user message parts carrying tool results' images on the chat-completions wire."""
    parts: list[dict[str, Any]] = []
    for m in results:
        parts.append({"type": "text", "text": f"Images of the {m.name} result ({m.tool_call_id}):"})
        parts.extend(map(_openai_image, m.images))
    return parts


def _openai_image(image: ImagePart) -> dict[str, Any]:
    if image.data is None:
        return {"type": "text", "text": image.missing_note()}
    url = f"data:{image.media_type};base64,{image.base64()}"
    return {"type": "image_url", "image_url": {"url": url}}


def _anthropic_image(image: ImagePart) -> dict[str, Any]:
    if image.data is None:
        return {"type": "text", "text": image.missing_note()}
    source = {"type": "base64", "media_type": image.media_type, "data": image.base64()}
    return {"type": "image", "source": source}


def to_anthropic(messages: list[Message]) -> list[dict[str, Any]]:
    """Project messages onto the Anthropic messages wire.

    Tool results become user turns with `tool_result` blocks (an image result's blocks hold
    its images); consecutive same-role turns are merged so roles strictly alternate (T7).
    Signed thinking blocks go back first in their assistant turn (A7); reasoning never
    becomes text.
    """
    out: list[dict[str, Any]] = []
    for m in model_visible(messages):
        if m.role == "system":
            continue
        if m.role == "tool":
            role = "user"
            result: str | list[dict[str, Any]] = m.content
            if m.images:
                result = [{"type": "text", "text": m.content}, *map(_anthropic_image, m.images)]
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": result}
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
            blocks.extend(map(_anthropic_image, m.images))
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _thinking_block(block: ThinkingBlock) -> dict[str, Any]:
    if block.redacted_data:
        return {"type": "redacted_thinking", "data": block.redacted_data}
    return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
