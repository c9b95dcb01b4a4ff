"""A request the server said does not fit: learn the window it named, compact once, retry.

llama.cpp, vLLM, Ollama, LM Studio, OpenAI and Anthropic each say so in their own words
(providers/errors.py reads them); the turn compacts at most once for it (C4's attempts
hold here too), and the window the error named is kept for the rest of the process.
"""

from __future__ import annotations

from agent import events as ev
from agent.compaction import ContextCompressor
from agent.config import ProviderConfig
from agent.ports import CompactionHost
from agent.providers.discovery import SERVERS
from agent.providers.errors import ProviderError


def compact_after_overflow(
    exc: ProviderError,
    *,
    provider: ProviderConfig,
    model: str,
    compressor: ContextCompressor,
    host: CompactionHost,
    compacted_this_turn: bool,
) -> bool:
    """Learn the window `exc` named; compact unless the turn did already; True when a
    compaction committed (the call may then be retried)."""
    if exc.context_limit and not provider.context_window:
        source = "the server's context overflow error"
        SERVERS.learn_window(provider, model, exc.context_limit, source)
    if compacted_this_turn or compressor.blocked_reason() == "attempts":
        return False  # C4: max_attempts holds here too
    compressor.turn_attempts += 1
    size = f" ({exc.context_limit:,} tokens)" if exc.context_limit else ""
    host.sink(
        ev.Notice(
            f"The conversation no longer fits {provider.name}'s context{size}: "
            "compacting it and retrying once.",
            "warning",
        )
    )
    return compressor.compact(host, reason="overflow").ok
