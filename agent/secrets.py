"""Keys stay out of tools and records (SPEC H5, K3): key variables, key values, URL credentials."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from agent.providers.errors import CREDENTIAL_NAME, MIN_SECRET_LENGTH, REDACTED, redact

if TYPE_CHECKING:
    from agent.config import Config, ProviderConfig

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

_CREDENTIAL_NAME = re.compile(rf"(?i)^{CREDENTIAL_NAME}$")


def is_credential_name(name: str) -> bool:
    """Whether a query parameter or header called `name` carries a credential."""
    return bool(_CREDENTIAL_NAME.match(name.strip()))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials in a URL: its userinfo (password, or a lone token), credential parameters."""
    if not url:
        return ()
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    found: list[str] = []
    userinfo, at, _host = parts.netloc.rpartition("@")
    if at:
        user, colon, password = userinfo.partition(":")
        # With a password the user name is usually just a name; alone, it is often a token.
        found.append(password if colon else user)
    for pair in (parts.query, parts.fragment):
        for item in pair.split("&"):
            name, eq, value = item.partition("=")
            if eq and value and is_credential_name(unquote_plus(name)):
                found.append(value)
    # Both spellings: the URL carries the percent-encoded form, headers and errors the decoded.
    return tuple(dict.fromkeys(v for raw in found for v in (raw, unquote(raw)) if v))


def safe_url(url: str | None) -> str:
    """`url` fit to store or show: no userinfo, no fragment, credential query values redacted."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url, url_secrets(url))
    host = parts.netloc.rpartition("@")[2]
    query = "&".join(_masked(item) for item in parts.query.split("&")) if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def _masked(item: str) -> str:
    name, eq, value = item.partition("=")
    if eq and value and is_credential_name(unquote_plus(name)):
        return f"{name}={REDACTED}"
    return item


def _header_secrets(headers: Mapping[str, str]) -> Iterator[str]:
    """Values of configured headers that carry credentials (`Authorization: Bearer x`...)."""
    for name, value in headers.items():
        if isinstance(value, str) and is_credential_name(str(name)):
            yield value
            _scheme, space, token = value.partition(" ")
            if space and token:
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


# -- keys that cannot go into an HTTP header ------------------------------------------------------


def header_problem(value: str) -> str | None:
    """What keeps `value` out of an HTTP header ("a line break", ...), or None when it fits."""
    if value != value.strip(" \t"):
        return "leading or trailing whitespace"
    for char in value:
        if char in "\r\n":
            return "a line break"
        if char < " " or char == "\x7f":
            return "a control character"
        if char > "~":
            return "a non-ASCII character"
    return None


def key_sources(
    provider: ProviderConfig, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """(where it comes from, value) for every key of `provider`: inline, then its variables."""
    environ = os.environ if environ is None else environ
    if provider.api_key:
        yield f"`providers.{provider.name}.api_key`", provider.api_key
    for name in (provider.api_key_env, *provider.api_keys_env):
        if name and environ.get(name):
            yield f"the environment variable {name}", environ[name]


def unsendable_key(
    provider: ProviderConfig, environ: Mapping[str, str] | None = None
) -> str | None:
    """One sentence naming the first key of `provider` that cannot be sent, or None."""
    for source, value in key_sources(provider, environ):
        if not isinstance(value, str):
            return f"The API key in {source} must be a string of text."
        problem = header_problem(value)
        if problem:
            return unsendable_sentence(source, problem)
    return None


def unsendable_sentence(source: str, problem: str) -> str:
    """The sentence for a key (or header value) at `source` that holds `problem`."""
    return (
        f"The API key in {source} contains {problem}, which cannot be sent in an HTTP header: "
        "set it again without it."
    )
