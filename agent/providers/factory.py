"""Build the wire adapter for a configured provider."""

from __future__ import annotations

import importlib

from agent.config import ProviderConfig, missing_key
from agent.credentials import unsendable_key
from agent.kinds import ErrorKind
from agent.providers.base import Provider
from agent.providers.errors import ProviderError


def make_provider(config: ProviderConfig, *, idle_timeout: float) -> Provider:
    """The adapter for `config`'s wire; a ProviderError that says which key is missing."""
    no_key = missing_key(config)
    if no_key:
        raise ProviderError(ErrorKind.AUTH, no_key)
    key = config.resolved_key() or "local"  # a loopback server takes any key
    problem = unsendable_key(config)
    if problem:
        # Before any request: an SDK would fail deep in its header code (H5).
        raise ProviderError(ErrorKind.CONFIG, problem)
    if config.kind == "anthropic":
        from agent.providers.anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider(config, api_key=key, idle_timeout=idle_timeout)
    from agent.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(config, api_key=key, idle_timeout=idle_timeout)


WIRE_MODULES = {
    "anthropic": ("anthropic", "agent.providers.anthropic_messages"),
    "openai": ("openai", "agent.providers.openai_chat"),
}
"""What a call on each wire imports: its SDK (the larger part) and our adapter."""


def preload_wire(kind: str) -> None:
    """Import what a call on wire `kind` needs now, so the first call does not wait for it."""
    for name in WIRE_MODULES.get(kind, WIRE_MODULES["openai"]):
        importlib.import_module(name)


class ProviderCache:
    """The adapters of the providers an agent has called, each built once and kept: an
    adapter holds the reusable client (providers/wire.py), so its connections stay warm."""

    def __init__(self, idle_timeout: float) -> None:
        self._idle_timeout = idle_timeout
        self._built: dict[str, Provider] = {}

    def get(self, config: ProviderConfig) -> Provider:
        """The adapter of `config`'s provider, built on first use."""
        provider = self._built.get(config.name)
        if provider is None:
            provider = make_provider(config, idle_timeout=self._idle_timeout)
            self._built[config.name] = provider
        return provider

    def close(self) -> None:
        """Release every adapter's client."""
        for provider in self._built.values():
            provider.close()
        self._built.clear()
