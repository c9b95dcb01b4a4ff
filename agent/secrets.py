"""Keys stay out of tools and records (SPEC H5, K3): key variables, key values, URL credentials."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.credentials import is_credential_name, url_secrets
from agent.providers.errors import MIN_SECRET_LENGTH, redact

if TYPE_CHECKING:
    from agent.config import Config

STANDARD_KEY_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "XAI_API_KEY",
    "NOUS_API_KEY",
)
"""Provider key variables kept from tool processes even when no configured provider names them."""


def _header_secrets(headers: Mapping[str, str]) -> Iterator[str]:
    """Values of configured headers that carry credentials (`Authorization: Bearer x`...)."""
    for name, value in headers.items():
        if isinstance(value, str) and is_credential_name(str(name)):
            yield value
            # The credential is all that follows the scheme (`Digest a=1, b=2`), not its last word.
            _scheme, _space, token = value.partition(" ")
            if token:
                yield token.strip()


@dataclass(frozen=True)
class Secrets:
    """The keys of a configuration: variables kept from tools, values redacted from output."""

    key_env: frozenset[str]
    """Names of the environment variables that hold keys."""
    passthrough: frozenset[str]
    """Key variables the user lets through to tools (`agent.shell_env_passthrough`)."""
    values: tuple[str, ...]
    """Every configured key and URL credential, longest first."""

    @classmethod
    def of(cls, config: Config, environ: Mapping[str, str] | None = None) -> Secrets:
        """The secrets of `config` with the keys its variables hold in `environ` (os.environ)."""
        environ = os.environ if environ is None else environ
        names = set(STANDARD_KEY_ENV)
        values: list[str | None] = []
        for provider in config.providers.values():
            names.update(name for name in (provider.api_key_env, *provider.api_keys_env) if name)
            values.append(provider.api_key)
            values.extend(url_secrets(provider.base_url))
            values.extend(_header_secrets(provider.headers))
        values.extend(environ.get(name) for name in names)
        # Short values are placeholders ("demo", "ollama", "local"), not keys; redacting them
        # would mangle every tool output that mentions localhost.
        kept = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
        return cls(
            key_env=frozenset(names),
            passthrough=frozenset(config.agent.shell_env_passthrough),
            values=tuple(sorted(kept, key=len, reverse=True)),
        )

    def hidden_env(self, environ: Mapping[str, str] | None = None) -> frozenset[str]:
        """Variables a tool's process must not get: key variables and any variable holding a
        key's value, except those the user passes through by name."""
        environ = os.environ if environ is None else environ
        values = set(self.values)
        hidden = {n for n, value in environ.items() if n in self.key_env or value in values}
        return frozenset(hidden - self.passthrough)

    def redact(self, text: str) -> str:
        """`text` with every configured key and key-shaped string replaced (as errors are)."""
        return redact(text, self.values)
