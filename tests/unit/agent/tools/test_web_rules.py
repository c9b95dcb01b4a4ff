"""Permission rules and "always" over web_fetch name hosts (SPEC G3, N3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.tools.approvals import always_scope
from agent.tools.rules import Call, Decision, RuleProblem, parse_rule


def call(url: str) -> Call:
    return Call("web_fetch", "web", {"url": url}, Path("/"))


def test_a_host_rule_matches_that_host_in_every_spelling():
    """G3: `web_fetch(docs.python.org)` covers that host only; `*.` its subdomains."""
    exact = parse_rule("web_fetch(docs.python.org)")
    assert exact.matches(call("https://DOCS.python.org./3/"), Decision.ALLOW)
    assert not exact.matches(call("https://python.org/"), Decision.ALLOW)
    assert not exact.matches(call("https://docs.python.org.evil.example/"), Decision.ALLOW)
    wild = parse_rule("web_fetch(*.example.com)")
    assert wild.matches(call("http://a.example.com/x"), Decision.DENY)
    assert not wild.matches(call("http://example.com.evil/"), Decision.DENY)
    loop = parse_rule("web_fetch(127.0.0.1)")
    assert loop.matches(call("http://2130706433:8000/"), Decision.DENY)


def test_a_rule_with_a_url_is_refused():
    """A rule that names a URL rather than a host is a sentence, not a silent mismatch."""
    with pytest.raises(RuleProblem):
        parse_rule("web_fetch(https://example.com/)")


def test_always_covers_the_exact_host():
    """G3: "always for this domain" is the URL's host, nothing wider."""
    scope = always_scope("web_fetch", "web", {"url": "https://Docs.Python.org/3/library/"})
    assert scope is not None and scope.domain == "docs.python.org"
    assert scope != always_scope("web_fetch", "web", {"url": "https://python.org/"})
    assert always_scope("web_fetch", "web", {"url": "ftp://x/"}) is None
