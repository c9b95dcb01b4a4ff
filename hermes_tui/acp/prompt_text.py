"""A session/prompt's content blocks as the text of one user turn (E1)."""

from __future__ import annotations

from typing import Any

from acp import RequestError


def prompt_text(blocks: list[Any]) -> str:
    """Text as typed; an embedded resource's text after it, named by its URI; a link as its
    URI. Images and audio are refused in one sentence (the agent does not take them yet)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(str(block.uri))
        elif kind == "resource":
            text = getattr(block.resource, "text", None)
            if text is None:
                raise RequestError(-32602, "Only text resources can be attached, not binary ones.")
            parts.append(f"<context uri={block.resource.uri!r}>\n{text}\n</context>")
        else:
            raise RequestError(-32602, f"This agent takes text and resources, not {kind} content.")
    text = "\n\n".join(part for part in parts if part)
    if not text.strip():
        raise RequestError(-32602, "The prompt is empty: send some text.")
    return text
