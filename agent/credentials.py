"""What counts as a credential in a URL or a header, and what text an HTTP header can carry.

Below both the configuration (which refuses keys that cannot be sent) and `agent.secrets`
(which keeps a configuration's keys out of tools and records): it imports neither.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Protocol
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from agent.providers.errors import CREDENTIAL_NAME, REDACTED, redact


class KeyedProvider(Protocol):
    """What the key checks read of a provider (`agent.config.ProviderConfig`)."""

    @property
    def name(self) -> str: ...
    @property
    def api_key(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def api_keys_env(self) -> tuple[str, ...]: ...


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
        # url_secrets cannot split it either: only redact's key-shaped patterns apply.
        return redact(url)
    host = parts.netloc.rpartition("@")[2]
    query = "&".join(_masked(item) for item in parts.query.split("&"))  # "" stays ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def _masked(item: str) -> str:
    name, eq, value = item.partition("=")
    if eq and value and is_credential_name(unquote_plus(name)):
        return f"{name}={REDACTED}"
    return item


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
    provider: KeyedProvider, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """(where it comes from, value) for every key of `provider`: inline, then its variables."""
    environ = os.environ if environ is None else environ
    if provider.api_key:
        yield f"`providers.{provider.name}.api_key`", provider.api_key
    for name in (provider.api_key_env, *provider.api_keys_env):
        if name and environ.get(name):
            yield f"the environment variable {name}", environ[name]


def unsendable_key(provider: KeyedProvider, environ: Mapping[str, str] | None = None) -> str | None:
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
