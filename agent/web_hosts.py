"""Host names as `web_fetch` compares them: `web.allow`, `web.deny`, approvals and rules (G3).

A host is compared lowercased, without a trailing dot, IDNA-encoded, and an address spelled
oddly (`2130706433`) as its plain form, so `web.deny: [127.0.0.1]` also stops
`http://0177.0.0.1/`. A pattern is a host (`docs.python.org`) or `*.` and a domain
(`*.example.com`: its subdomains, not the domain itself).
"""

from __future__ import annotations

import re

from agent.web_addresses import literal_address

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def canonical_host(host: str) -> str:
    """`host` as compared: lowercase, no trailing dot, punycode, addresses in plain form."""
    text = host.strip().lower().rstrip(".")
    address = literal_address(text)
    if address is not None:
        return str(address)
    try:
        return text.encode("idna").decode("ascii")
    except UnicodeError:
        return text


def host_pattern_problem(text: str) -> str | None:
    """Why `text` is not a host pattern (a clause), or None when it is one."""
    if not isinstance(text, str) or not text.strip():
        return "is empty; give a host name like docs.python.org"
    bare = text.strip()
    if literal_address(bare) is not None:
        return None
    if "/" in bare or ":" in bare:
        return "is not a host name: give the host alone, without a scheme, port or path"
    name = canonical_host(bare.removeprefix("*."))
    if not all(_LABEL.match(label) for label in name.split(".")):
        return "is not a host name (letters, digits, dots and dashes; `*.` may start it)"
    return None


def matches(host: str, pattern: str) -> bool:
    """True when `host` is `pattern`'s host, or one of its subdomains for `*.domain`."""
    name = canonical_host(host)
    if pattern.startswith("*."):
        return name.endswith("." + canonical_host(pattern[2:]))
    return name == canonical_host(pattern)


def listed(host: str, patterns: tuple[str, ...]) -> bool:
    """True when any of `patterns` matches `host`."""
    return any(matches(host, pattern) for pattern in patterns)


def url_host(url: object) -> str | None:
    """The canonical host of an http(s) URL, as web_fetch parses it, or None."""
    import httpx2

    if not isinstance(url, str):
        return None
    try:
        parsed = httpx2.URL(url.strip())
    except (httpx2.InvalidURL, TypeError, ValueError):
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return None
    return canonical_host(parsed.host)
