"""A tool result or a prompt from an MCP server, as text for the model.

Text blocks are the answer; an image goes to the model as an image (`result_images`, G4),
with a one-line note in the text; audio or a binary resource is a one-line note (the model
gets no bytes it cannot read, and the screen no base64); structured content is added as JSON
unless a text block already says the same. Everything is cut at `cap` characters while it is
assembled, so a server's 100 MB answer costs no more than the cap (the registry caps again).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from agent.images import MAX_SOURCE_BYTES, ImageRefused, prepare
from agent.messages import ImagePart

EMPTY = "(the tool returned nothing)"
MAX_RESULT_IMAGES = 8
"""The images of one result the model is sent; the rest are notes."""


def _size(data: str) -> str:
    """The decoded size of base64 `data`, in words."""
    raw = len(data) * 3 // 4
    if raw < 1024:
        return f"{raw} bytes"
    if raw < 1024 * 1024:
        return f"{raw / 1024:.1f} KB"
    return f"{raw / (1024 * 1024):.1f} MB"


def block_text(block: Any) -> str:
    """One content block as text (a note for what is not text)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "image":
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if kind == "audio":
        return f"[{kind}: {block.mime_type}, {_size(block.data)}; not shown to the model]"
    if kind == "resource_link":
        title = f" ({block.name})" if getattr(block, "name", "") else ""
        return f"[resource link: {block.uri}{title}]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {resource.uri}]\n{text}"
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource {resource.uri}: {mime}, {_size(getattr(resource, 'blob', ''))}]"
    return f"[{kind or 'unknown'} content]"


def result_images(result: Any, name: str) -> tuple[tuple[ImagePart, ...], list[str]]:
    """A CallToolResult's images, scaled for the model (G4), and a note for each not sent."""
    parts: list[ImagePart] = []
    notes: list[str] = []
    blocks = [b for b in result.content or () if getattr(b, "type", "") == "image"]
    for index, block in enumerate(blocks, 1):
        label = f"{name} image {index}"
        if len(parts) >= MAX_RESULT_IMAGES:
            notes.append(f"[{label}: not sent, more than {MAX_RESULT_IMAGES} images]")
            continue
        try:
            parts.append(prepare(_decoded(str(block.data))).part(label))
        except ImageRefused as exc:
            notes.append(f"[{label}: not sent, {exc}]")
    return tuple(parts), notes


def _decoded(data: str) -> bytes:
    if len(data) > MAX_SOURCE_BYTES * 4 // 3 + 4:
        raise ImageRefused(f"over {MAX_SOURCE_BYTES // 2**20} MB, too big to read as an image")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageRefused("its data is not base64") from None


def result_text(result: Any, cap: int) -> str:
    """A CallToolResult as the text the model reads, at most about `cap` characters."""
    parts: list[str] = []
    used = 0
    texts: list[str] = []
    for block in result.content or ():
        text = block_text(block)
        if getattr(block, "type", "") == "text":
            texts.append(text)
        parts.append(text[: max(cap - used, 0) + 1])
        used += len(parts[-1])
        if used > cap:
            break
    structured = getattr(result, "structured_content", None)
    if structured is not None and used <= cap and not _said(structured, texts, result.content):
        try:
            dumped = json.dumps(structured, ensure_ascii=False)
        except (TypeError, ValueError):
            dumped = str(structured)
        parts.append(dumped[: cap - used + 1])
    return "\n".join(part for part in parts if part) or EMPTY


def _said(structured: Any, texts: list[str], content: Any) -> bool:
    """True when the content blocks already say what the structured content says (the spec
    asks servers to send both; MCPServer wraps a plain return value as {"result": value},
    and a list of blocks as that list again)."""
    candidates = [structured]
    if isinstance(structured, dict) and set(structured) == {"result"}:
        candidates.append(structured["result"])
    joined = "".join(texts)
    blocks = [_dumped(block) for block in content or ()]
    for value in candidates:
        if (isinstance(value, str) and value == joined) or (blocks and value == blocks):
            return True
        for text in texts:
            try:
                if json.loads(text) == value:
                    return True
            except (ValueError, RecursionError):
                continue
    return False


def _dumped(block: Any) -> Any:
    try:
        return block.model_dump(by_alias=True, mode="json")
    except AttributeError:
        return None


def prompt_text(result: Any, cap: int = 200_000) -> str:
    """A GetPromptResult's messages as one text to send as the user's message."""
    parts: list[str] = []
    for message in result.messages:
        text = block_text(message.content)
        if message.role != "user":
            text = f"[{message.role}]\n{text}"
        parts.append(text)
    joined = "\n\n".join(parts)
    return joined[:cap]
