"""Which addresses `web_fetch` may connect to: public ones only, unless the host is allowed (G3).

A URL's host can spell an address in many ways: `127.0.0.1`, `2130706433`, `0177.0.0.1`,
`0x7f.1`, `[::ffff:127.0.0.1]`. Browsers and the C library read all of them as loopback,
so this module reads them the same way (the WHATWG URL rules for IPv4) and judges the
address, never the spelling. An IPv6 address that carries an IPv4 one (mapped, compatible,
6to4, NAT64) is judged by the IPv4 address inside it too.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv6Address

IPAddress = IPv4Address | IPv6Address

METADATA = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
"""Cloud metadata endpoints (they hand out the machine's credentials)."""
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _ipv4_part(text: str) -> int | None:
    """One dotted part as the URL rules read it: decimal, octal (leading 0) or hex (0x)."""
    if text[:2].lower() == "0x":
        digits, base = text[2:], 16
    elif len(text) > 1 and text.startswith("0"):
        digits, base = text[1:], 8
    else:
        digits, base = text, 10
    if digits == "":
        return 0 if base == 16 else None
    try:
        return int(digits, base) if digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def legacy_ipv4(host: str) -> IPv4Address | None:
    """The IPv4 address `host` spells in any of the forms browsers accept, or None."""
    parts = host.split(".")
    if parts and parts[-1] == "":
        parts.pop()  # a trailing dot, as in `127.0.0.1.`
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_part(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    values = [number for number in numbers if number is not None]
    *leading, last = values
    if any(value > 255 for value in leading) or last >= 256 ** (5 - len(values)):
        return None
    total = last
    for index, value in enumerate(leading):
        total += value << (8 * (3 - index))
    return IPv4Address(total)


def literal_address(host: str) -> IPAddress | None:
    """The address a URL host names literally (`[::1]`, `10.0.0.1`, `0x7f.1`), or None."""
    bare = host.strip("[]")
    if ":" in bare:
        try:
            return IPv6Address(bare.split("%", 1)[0])
        except ValueError:
            return None
    return legacy_ipv4(bare)


def embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, 6to4, NAT64), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why `web_fetch` may not connect to `address` (a few words), or None when it is public."""
    if isinstance(address, IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            return refusal(inner)
    if address in METADATA:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address (this machine)"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, IPv4Address) and address in CGNAT:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None
