"""A tool result or a prompt from an MCP server, as text for the model.

Text blocks are the answer; an image, audio or binary resource is a one-line note (the model
gets no bytes it cannot read, and the screen no base64); structured content is added as JSON
unless a text block already says the same. Everything is cut at `cap` characters while it is
assembled, so a server's 100 MB answer costs no more than the cap (the registry caps again).
"""

from __future__ import annotations

import json
from typing import Any

EMPTY = "(the tool returned nothing)"


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
    if kind in ("image", "audio"):
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
