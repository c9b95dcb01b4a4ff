"""Tool names on the wire: `mcp__<server>__<tool>`, in the charset every provider accepts.

OpenAI and Anthropic both take `^[a-zA-Z0-9_-]{1,64}$` for a function name. A server picks its
tool names freely (dots, spaces, unicode, 300 characters, two tools that differ only in a
character we replace), so each name is mapped once: disallowed characters become `_`, a
name too long is cut and given a short digest of the original, and a clash gets a counter.
The mapping is deterministic: the same tool list gives the same names in every run.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_NAME = 64
_DISALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def clean(text: str) -> str:
    """`text` in the wire charset: anything else becomes `_` (an empty name becomes `tool`)."""
    cleaned = _DISALLOWED.sub("_", text)
    return cleaned or "tool"


def wire_name(server: str, tool: str) -> str:
    """The wire name of `tool` of `server`, cut to 64 characters with a digest when long."""
    name = f"{PREFIX}{clean(server)}{SEPARATOR}{clean(tool)}"
    if len(name) <= MAX_NAME:
        return name
    suffix = f"_{_digest(tool)}"
    return name[: MAX_NAME - len(suffix)] + suffix


def assign(server: str, tools: list[str], taken: set[str] | None = None) -> dict[str, str]:
    """Tool name -> a unique wire name, for the tools of one server, in list order.

    `taken` holds names already used elsewhere (built-in tools, other servers); it is
    extended with the names given out here. A tool listed twice keeps its first name.
    """
    used = taken if taken is not None else set()
    out: dict[str, str] = {}
    for tool in tools:
        if tool in out:
            continue
        name = wire_name(server, tool)
        if name in used:
            base = name[: MAX_NAME - 8]
            counter = 2
            while f"{base}_{counter}" in used:
                counter += 1
            name = f"{base}_{counter}"
        used.add(name)
        out[tool] = name
    return out
