"""The image parts of a request as the scripted server logs them, on either wire (G4).

Tests read them from a recorded request (`RecordedRequest.images`) to check the exact part
a model was sent: its wire form, media type and decoded bytes, and whether it came in a user
turn or inside an Anthropic tool result.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

DATA_URL_PREFIX = "data:"


@dataclass(frozen=True)
class SeenImage:
    """One image part of a request: where it was, what it said it is, its decoded bytes."""

    role: str
    media_type: str
    data: bytes
    in_tool_result: bool = False
    part: str = ""
    """The part's wire type: `image_url` (chat completions) or `image` (messages)."""


def image_parts(body: Any, wire: str) -> list[SeenImage]:
    """Every image part of a request `body` of `wire`, in order; malformed parts are skipped."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    found: list[SeenImage] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", ""))
        for block, in_tool in _blocks(message.get("content")):
            seen = _openai(role, block) if wire == "openai" else _anthropic(role, block, in_tool)
            if seen is not None:
                found.append(seen)
    return found


def _blocks(content: Any, in_tool: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            yield from _blocks(block.get("content"), True)
        else:
            yield block, in_tool


def _openai(role: str, block: dict[str, Any]) -> SeenImage | None:
    if block.get("type") != "image_url":
        return None
    image = block.get("image_url")
    url = image.get("url") if isinstance(image, dict) else None
    if not isinstance(url, str) or not url.startswith(DATA_URL_PREFIX) or "," not in url:
        return None
    head, _, payload = url.partition(",")
    media_type, _, encoding = head[len(DATA_URL_PREFIX) :].partition(";")
    data = _decoded(payload) if encoding == "base64" else None
    return None if data is None else SeenImage(role, media_type, data, part="image_url")


def _anthropic(role: str, block: dict[str, Any], in_tool: bool) -> SeenImage | None:
    if block.get("type") != "image":
        return None
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        return None
    data = _decoded(source.get("data"))
    media_type = str(source.get("media_type", ""))
    return None if data is None else SeenImage(role, media_type, data, in_tool, "image")


def _decoded(payload: Any) -> bytes | None:
    if not isinstance(payload, str):
        return None
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
