"""What the agent knows about a model: its context window and how to estimate tokens.

The one home of both numbers: compaction measures against `context_window_for` and the
status bar's context bar shows the same window, so the bar fills up exactly as the agent
gets closer to compacting. The window is, in this order: `providers.NAME.context_window`,
what the server said (agent/providers/discovery.py: llama.cpp, vLLM, Ollama, LM Studio, or the
size an overflow error named), the known-models table, else unknown (None): never a guess.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent.config import ProviderConfig, split_model_ref
from agent.messages import model_visible
from agent.providers.discovery import SERVERS

if TYPE_CHECKING:
    from agent.config import Config
    from agent.messages import Message
    from agent.providers.base import ChatRequest

DEFAULT_CONTEXT_WINDOW = 32_768
"""What compaction assumes (and says it assumes) when nobody knows the model's window.

Small on purpose: an unknown model is most often a local one (Ollama, llama.cpp, vLLM) whose
server runs with a small window, and compacting early loses nothing (the full history stays
in the database), while overflowing the window fails the request. The context bar never
shows it: an unknown window is shown as unknown.
"""

# Longest prefix wins; matched against the model name (after any `vendor/`) in lower case.
KNOWN_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
    ("gemini-1.5", 1_048_576),
    ("gemini-2", 1_048_576),
    ("grok-4", 256_000),
    ("grok-3", 131_072),
    ("deepseek", 128_000),
    ("llama-3", 131_072),
    ("hermes-4", 131_072),
    ("qwen", 32_768),
    ("mistral", 32_768),
)

CHARS_PER_TOKEN = 4
"""The rough, deterministic estimate used wherever no provider count is at hand."""


def table_window(model: str) -> int | None:
    """The known-models table's window for `model` (longest prefix), or None."""
    name = model.lower().rsplit("/", 1)[-1]
    best: tuple[int, int] | None = None
    for prefix, window in KNOWN_CONTEXT_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), window)
    return best[1] if best else None


def window_and_source(provider: ProviderConfig | None, model: str) -> tuple[int | None, str]:
    """The model's window and where it comes from: config, the server, the table, or unknown.

    Never blocks: the server's answer is what it already said (the agent asks it, lazily,
    before the first request of a turn).
    """
    if provider is not None and provider.context_window:
        return int(provider.context_window), "config"
    if provider is not None:
        facts = SERVERS.known(provider, model)
        if facts is not None and facts.context_window:
            return facts.context_window, facts.window_source or "server"
    window = table_window(model)
    return window, ("known models" if window else "unknown")


def context_window(provider: ProviderConfig | None, model: str) -> int | None:
    """The model's window (see `window_and_source`), None when nobody knows it."""
    return window_and_source(provider, model)[0]


def context_window_for(config: Config, model_ref: str) -> int | None:
    """The window of `provider:model` under `config` (an unconfigured provider: the table)."""
    provider_name, model = split_model_ref(model_ref)
    return context_window(config.providers.get(provider_name), model)


def tokens_for_chars(chars: int) -> int:
    """Estimated tokens of `chars` characters of text, rounded up."""
    return (chars + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_tokens(
    messages: list[Message],
    system: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    *,
    wire: str | None = None,
) -> int:
    """A rough, deterministic estimate of what the model sees: ~4 characters a token, and
    each image by `wire`'s formula (agent/image_tokens.py; None: the wire is not known)."""
    chars = len(system or "") + (len(json.dumps(tools)) if tools else 0)
    count = 0
    for m in model_visible(messages):
        count += 1
        chars += len(m.content or "")
        for call in m.tool_calls:
            chars += len(call.name) + len(call.arguments or "")
    return chars // CHARS_PER_TOKEN + 4 * count + estimate_image_tokens(messages, wire)


def estimate_image_tokens(messages: list[Message], wire: str | None) -> int:
    """The tokens of the images the model sees in `messages`, by `wire`'s formula."""
    from agent.image_tokens import image_tokens

    return sum(
        image_tokens(image.width, image.height, wire)
        for m in model_visible(messages)
        for image in m.images
    )


def estimate_request(request: ChatRequest) -> int:
    """The estimate of a whole request: its messages, system prompt, tool schemas and images."""
    return estimate_tokens(request.messages, request.system, request.tools, wire=request.wire)
