"""Prompt-cache breakpoints ($1): where a request tells Anthropic to cache its prefix.

Anthropic caches a prefix (tools, then system, then messages) only up to a block marked
`cache_control`, at most four per request. They go where they pay: the last tool (the tool
list alone, kept when the instruction files change), the system prompt with the instruction
files, and two sliding ones on the last two user turns (a typed message or tool results):
the newer one writes this call's prefix, the older one sits where the previous call's newer
one was, so the call reads everything the previous call wrote. Marks never go on thinking
blocks (the API refuses them there), and the marks are the only bytes that move between
calls: the prefix itself stays byte-identical (T7).

The same marks go on content parts for Anthropic models reached through OpenRouter's
chat-completions wire, as OpenRouter documents (system and user/tool message parts).
Elsewhere caching is implicit (OpenAI, Gemini, xAI cache a stable prefix by themselves).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.config import ProviderConfig

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""Anthropic refuses a request with more."""
SLIDING = 2
"""Breakpoints on the latest user turns."""
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
OPENROUTER_HOST = "openrouter.ai"


def uses_breakpoints(provider: ProviderConfig, model: str, host: str) -> bool:
    """Whether requests to `model` carry breakpoints: the provider's `cache_breakpoints`,
    else the Anthropic wire, or an Anthropic model on OpenRouter."""
    if provider.cache_breakpoints is not None:
        return provider.cache_breakpoints
    if provider.kind == "anthropic":
        return True
    return host == OPENROUTER_HOST and model.startswith("anthropic/")


def _mark(block: dict[str, Any]) -> None:
    block["cache_control"] = dict(EPHEMERAL)


def _last_markable(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block of a message that may carry a mark (never a thinking block)."""
    for block in reversed(blocks):
        if isinstance(block, dict) and block.get("type") not in _UNMARKABLE:
            return block
    return None


def mark_anthropic(kwargs: dict[str, Any]) -> None:
    """Put the breakpoints into a messages-API request's keyword arguments, in place."""
    left = MAX_BREAKPOINTS
    tools = kwargs.get("tools")
    if tools:
        _mark(tools[-1])
        left -= 1
    system = kwargs.get("system")
    if isinstance(system, str) and system:
        kwargs["system"] = [{"type": "text", "text": system}]
        _mark(kwargs["system"][-1])
        left -= 1
    user_turns = [m for m in kwargs.get("messages") or () if m.get("role") == "user"]
    for message in user_turns[max(0, len(user_turns) - min(SLIDING, left)) :]:
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content = [{"type": "text", "text": content}]
        block = _last_markable(content) if isinstance(content, list) else None
        if block is not None:
            _mark(block)


def mark_openrouter(messages: list[dict[str, Any]]) -> None:
    """Put the breakpoints on OpenRouter's content parts (system, the two latest user or
    tool messages), in place; its tool list carries none (not documented there).

    Every system, user and tool message's text becomes a list of parts, marked or not: a
    message keeps the same bytes when its mark moves on (T7).
    """
    marked = [m for m in messages if m.get("role") in ("user", "tool")][-SLIDING:]
    system = next((m for m in messages if m.get("role") == "system"), None)
    if system is not None:
        marked.append(system)
    for message in messages:
        if message.get("role") not in ("system", "user", "tool"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content = [{"type": "text", "text": content}]
        block = _last_markable(content) if isinstance(content, list) else None
        if block is not None and any(message is m for m in marked):
            _mark(block)


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request body's breakpoints are, as paths (`tools[3]`, `messages[2].content[0]`):
    what tests and the scripted server read back."""
    found: list[str] = []
    for key in ("tools", "system", "messages"):
        value = body.get(key)
        if isinstance(value, list):
            _find(value, key, found)
    return found


def _find(items: list[Any], path: str, found: list[str]) -> None:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        here = f"{path}[{index}]"
        if "cache_control" in item:
            found.append(here)
        content = item.get("content")
        if isinstance(content, list):
            _find(content, f"{here}.content", found)
