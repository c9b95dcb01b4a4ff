"""One GET for `web_fetch`: checked addresses, pinned connections, bounded time and size (G3).

Each hop resolves its host once, refuses it unless every address is public (or the host is
in `web.allow`; `web.deny` wins), and then connects to exactly the address it checked: the
network backend below ignores the name httpx2 asks for, so a DNS answer that changes between
the check and the connect (rebinding) changes nothing, while the Host header and TLS (SNI
and the certificate check) still use the URL's name. Redirects are followed by hand, at most
MAX_REDIRECTS, each hop checked again; one to another host is not followed but reported, so
the model fetches it as a new call, approved for its own domain. The environment's proxy
variables are not used: a proxy would resolve names itself, out of reach of the check.

A watchdog shuts the sockets down at the deadline or a stop, so a server that sends one byte
a second cannot hold a call past its time, nor a stop for more than a moment (H6).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2

from agent.httpx_compat import set_network_backend
from agent.version import USER_AGENT
from agent.web_addresses import IPAddress, literal_address, refusal
from agent.web_hosts import canonical_host, listed

TOTAL_SECONDS = 20.0
MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
WATCH_INTERVAL = 0.05  # seconds between the watchdog's looks at the stop flag and the clock
REDIRECTS = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1"


class FetchRefused(Exception):
    """The URL or a hop is not fetched; the message is one sentence for the model."""


@dataclass(frozen=True)
class Limits:
    """How long a fetch may take in all, how much body it reads, how many redirects."""

    total_seconds: float = TOTAL_SECONDS
    max_bytes: int = MAX_BYTES
    max_redirects: int = MAX_REDIRECTS


@dataclass(frozen=True)
class Page:
    """What a fetch got: the final URL, status, content type, the body read and whether it
    was cut at the cap; `elsewhere` is a redirect to another host, not followed."""

    url: str
    status: int
    content_type: str
    body: bytes = b""
    cut: bool = False
    elsewhere: str = ""


@dataclass(frozen=True)
class Target:
    """A checked hop: its URL, the canonical host and the addresses it may connect to."""

    url: httpx2.URL
    host: str
    addresses: tuple[IPAddress, ...]


class _Watch:
    """Shuts every socket of a fetch down at its deadline or on a stop; says which came."""

    def __init__(self, deadline: float, cancel: threading.Event | None) -> None:
        self.deadline = deadline
        self.cancel = cancel
        self.ended = ""
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="web-fetch-watch", daemon=True)
        self._thread.start()

    def add(self, sock: socket.socket | None) -> None:
        """Watch `sock` (shut it down at once when the fetch has already ended)."""
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            late = bool(self.ended)
        if late:
            self._shut()

    def check(self) -> None:
        """Raise FetchRefused when the deadline passed or a stop came."""
        if self.cancel is not None and self.cancel.is_set():
            self.ended = self.ended or "stopped"
        elif time.monotonic() >= self.deadline:
            self.ended = self.ended or "timeout"
        if self.ended:
            raise FetchRefused(self.sentence())

    def sentence(self) -> str:
        """Why the fetch ended early, as one sentence."""
        if self.ended == "stopped":
            return "web_fetch stopped: the user stopped the turn."
        return "web_fetch gave up: the page took longer than its time limit."

    def remaining(self) -> float:
        """Seconds left before the deadline (at least a little, for a timeout argument)."""
        return max(self.deadline - time.monotonic(), 0.01)

    def close(self) -> None:
        """The fetch is over: stop watching."""
        self._done.set()

    def _run(self) -> None:
        while not self._done.wait(WATCH_INTERVAL):
            stopped = self.cancel is not None and self.cancel.is_set()
            if stopped or time.monotonic() >= self.deadline:
                self.ended = "stopped" if stopped else "timeout"
                self._shut()
                return

    def _shut(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _PinnedBackend(httpcore2.NetworkBackend):
    """Connects to the checked addresses, whatever name it is asked for (no rebinding)."""

    def __init__(self, addresses: tuple[IPAddress, ...], watch: _Watch) -> None:
        self._inner = httpcore2.SyncBackend()
        self._addresses = addresses
        self._watch = watch

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        failure: Exception | None = None
        for address in self._addresses:
            try:
                stream = self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as exc:
                failure = exc
                continue
            self._watch.add(stream.get_extra_info("socket"))
            return stream
        raise failure or httpcore2.ConnectError(f"no address to connect to for {host}")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore2.NetworkStream:
        raise httpcore2.ConnectError("web_fetch connects over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)  # httpcore2's retry pause; the pool is made with no retries


def parse_url(url: str) -> httpx2.URL:
    """`url` parsed, or FetchRefused saying why it is not an http(s) URL web_fetch reads."""
    try:
        parsed = httpx2.URL(url.strip())
    except (httpx2.InvalidURL, TypeError, ValueError) as exc:
        raise FetchRefused(f"web_fetch refused: {url!r} is not a URL ({exc}).") from None
    if parsed.scheme not in ("http", "https"):
        raise FetchRefused("web_fetch refused: only http:// and https:// URLs are fetched.")
    if not parsed.host:
        raise FetchRefused(f"web_fetch refused: {url!r} names no host.")
    if parsed.userinfo:
        raise FetchRefused("web_fetch refused: a URL with a user name or password is not fetched.")
    return parsed


def _resolve(host: str, port: int, watch: _Watch) -> tuple[IPAddress, ...]:
    """Every address `host` resolves to, on a thread of its own (getaddrinfo has no timeout)."""
    found: list[Any] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            found.append(exc)
        finally:
            done.set()

    threading.Thread(target=lookup, name="web-fetch-dns", daemon=True).start()
    while not done.wait(WATCH_INTERVAL):
        watch.check()
    if found and isinstance(found[0], Exception):
        raise FetchRefused(f"web_fetch failed: the host {host} could not be resolved.")
    addresses: list[IPAddress] = []
    for family, _, _, _, sockaddr in found:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = literal_address(str(sockaddr[0]))
            if address is not None and address not in addresses:
                addresses.append(address)
    if not addresses:
        raise FetchRefused(f"web_fetch failed: the host {host} has no address.")
    return tuple(addresses)


def check(url: httpx2.URL, allow: tuple[str, ...], deny: tuple[str, ...], watch: _Watch) -> Target:
    """The hop to `url`, its host and addresses checked; FetchRefused when it may not go."""
    host = canonical_host(url.host)
    if listed(host, deny):
        raise FetchRefused(f"web_fetch refused: {host} is in web.deny.")
    literal = literal_address(host)
    addresses = (literal,) if literal is not None else _resolve(host, url.port or 0, watch)
    if not listed(host, allow):
        for address in addresses:
            reason = refusal(address)
            if reason is not None:
                shown = host if str(address) == host else f"{host} ({address})"
                raise FetchRefused(
                    f"web_fetch refused: {shown} is {reason}; only public addresses are "
                    "fetched unless the host is in web.allow in config.yaml."
                )
    return Target(url, host, addresses)


def _same_site(one: str, other: str) -> bool:
    """The same host, or the same one with and without `www.`."""
    return one.removeprefix("www.") == other.removeprefix("www.")


def fetch(
    url: str,
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    limits: Limits = Limits(),
    cancel: threading.Event | None = None,
) -> Page:
    """GET `url` within `limits`; FetchRefused (one sentence) when it may not or cannot."""
    from agent.providers.wire import tls_context

    watch = _Watch(time.monotonic() + limits.total_seconds, cancel)
    try:
        target = check(parse_url(url), allow, deny, watch)
        first = target.host
        for _ in range(limits.max_redirects + 1):
            page = _get(target, limits, watch, tls_context())
            if page.status not in REDIRECTS or not page.elsewhere:
                return page
            hop = parse_url(str(target.url.join(page.elsewhere)))
            next_target = check(hop, allow, deny, watch)
            if not _same_site(next_target.host, first):
                return Page(str(target.url), page.status, page.content_type, elsewhere=str(hop))
            target = next_target
        raise FetchRefused(
            f"web_fetch gave up: more than {limits.max_redirects} redirects from {url}."
        )
    finally:
        watch.close()


def _get(target: Target, limits: Limits, watch: _Watch, context: Any) -> Page:
    """One request to a checked hop; a redirect comes back with its Location in `elsewhere`."""
    transport = httpx2.HTTPTransport(verify=context)
    set_network_backend(transport, _PinnedBackend(target.addresses, watch))
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT, "Accept-Encoding": "gzip, deflate"}
    timeout = httpx2.Timeout(min(watch.remaining(), limits.total_seconds))
    try:
        with (
            httpx2.Client(transport=transport, timeout=timeout, follow_redirects=False) as client,
            client.stream("GET", target.url, headers=headers) as response,
        ):
            content_type = response.headers.get("content-type", "")
            if response.status_code in REDIRECTS:
                location = response.headers.get("location", "")
                return Page(str(target.url), response.status_code, content_type, elsewhere=location)
            body, cut = _read(response, limits.max_bytes, watch)
            return Page(str(target.url), response.status_code, content_type, body, cut)
    except httpx2.HTTPError as exc:
        watch.check()  # a stop or the deadline shut the socket: say that, not the error
        raise FetchRefused(f"web_fetch failed: {_describe(exc)} ({target.url.host}).") from None


def _read(response: httpx2.Response, max_bytes: int, watch: _Watch) -> tuple[bytes, bool]:
    """The body up to `max_bytes` (decoded from gzip), and whether there was more."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > max_bytes:
            return bytes(body[:max_bytes]), True
        watch.check()
    return bytes(body), False


def _describe(exc: httpx2.HTTPError) -> str:
    if isinstance(exc, httpx2.TimeoutException):
        return "the server did not answer in time"
    if isinstance(exc, httpx2.ConnectError):
        return "could not connect"
    return f"{type(exc).__name__}: {exc}".rstrip(": ")
