"""The addresses web_fetch refuses, however a URL spells them (SPEC G3)."""

from __future__ import annotations

import pytest

from agent.web_addresses import literal_address, refusal
from agent.web_hosts import canonical_host, host_pattern_problem, matches, url_host

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("2130706433", "loopback"),  # decimal
    ("0177.0.0.1", "loopback"),  # octal
    ("0x7f.0.0.1", "loopback"),  # hex
    ("0x7f.1", "loopback"),  # two parts
    ("127.1", "loopback"),
    ("127.0.0.1.", "loopback"),  # trailing dot
    ("[::1]", "loopback"),
    ("[::ffff:127.0.0.1]", "loopback"),  # IPv4-mapped IPv6
    ("[::ffff:7f00:1]", "loopback"),
    ("[::127.0.0.1]", "loopback"),  # IPv4-compatible
    ("[2002:7f00:1::]", "loopback"),  # 6to4
    ("10.0.0.8", "private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("[::ffff:192.168.1.1]", "private"),
    ("[fc00::1]", "private"),
    ("169.254.169.254", "metadata"),
    ("[fd00:ec2::254]", "metadata"),
    ("[::ffff:169.254.169.254]", "metadata"),
    ("0xa9.0xfe.0xa9.0xfe", "metadata"),
    ("169.254.1.1", "link-local"),
    ("[fe80::1]", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.100.100.200", "carrier-grade NAT"),
    ("224.0.0.1", "multicast"),
    ("[ff02::1]", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("0", "unspecified"),
    ("[::]", "unspecified"),
    ("240.0.0.1", "address"),  # reserved (Python counts it private)
    ("[64:ff9b::a00:1]", "private"),  # NAT64 of 10.0.0.1
]

PUBLIC = ["8.8.8.8", "1.1.1.1", "[2606:4700:4700::1111]", "[::ffff:8.8.8.8]", "134744072"]
NAMES = ["example.com", "1e100.net", "1.2.3.4.5", "0x1g.1", "256.1.1.1.1", "docs.python.org"]


@pytest.mark.parametrize(("host", "why"), REFUSED)
def test_every_spelling_of_a_private_address_is_refused(host, why):
    """G3: loopback, private, link-local, CGNAT, multicast, unspecified and metadata
    addresses are refused, in decimal, octal, hex and IPv4-in-IPv6 spellings too."""
    address = literal_address(host)
    assert address is not None, host
    reason = refusal(address)
    assert reason is not None and why in reason, (host, reason)


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses_pass(host):
    """G3: a public address, even spelled as one number or mapped into IPv6, is fetched."""
    address = literal_address(host)
    assert address is not None and refusal(address) is None


@pytest.mark.parametrize("host", NAMES)
def test_names_are_left_to_the_resolver(host):
    """A host that spells no address is a name: its resolved addresses are judged instead."""
    assert literal_address(host) is None


def test_hosts_compare_in_one_form():
    """G3: web.allow / web.deny entries match every spelling of their host."""
    assert canonical_host("0177.0.0.1") == "127.0.0.1"
    assert canonical_host("Docs.Python.ORG.") == "docs.python.org"
    assert matches("2130706433", "127.0.0.1")
    assert matches("a.b.example.com", "*.example.com")
    assert not matches("example.com", "*.example.com")
    assert not matches("badexample.com", "*.example.com")
    assert url_host("https://[::ffff:127.0.0.1]:8443/x") == "::ffff:7f00:1"
    assert url_host("file:///etc/passwd") is None


@pytest.mark.parametrize("text", ["", "http://example.com", "example.com/path", "a b", "x_y.com"])
def test_a_bad_host_pattern_is_a_sentence(text):
    """A config or rule host that is not a host is refused with a clause saying why."""
    assert host_pattern_problem(text)
