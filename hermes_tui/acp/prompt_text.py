"""A session/prompt's content blocks as the text of one user turn (E1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import RequestError


def prompt_text(blocks: list[Any], workspace: Path) -> str:
    """Text as typed; an embedded resource's text after it, named by its URI; a link to a
    file in the workspace as an `@path` mention (attached as the TUI attaches it, P2), any
    other link as its URI. Images and audio are refused in one sentence (not taken yet)."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(mention(str(block.uri), workspace))
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


def mention(uri: str, workspace: Path) -> str:
    """`@relative/path` (quoted when it has spaces, as agent/attachments.py reads it) for a
    file:// URI inside `workspace`; the URI itself otherwise."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        relative = path.resolve().relative_to(workspace.resolve())
    except (ValueError, OSError):
        return uri
    text = relative.as_posix()
    if not text or text == "." or '"' in text or "\n" in text:
        return uri
    return f'@"{text}"' if any(c.isspace() for c in text) else f"@{text}"
