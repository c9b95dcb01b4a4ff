"""The scripted model server: a threaded stdlib HTTP server speaking OpenAI and Anthropic SSE."""

from __future__ import annotations

import dataclasses
import itertools
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.scripted.exchange import (
    DISCOVERY_PATHS,
    EPOCH_PREFIX,
    Answer,
    Dropped,
    Exchange,
    RecordedRequest,
)
from agent.scripted.prompt_cache import MIN_CACHEABLE_TOKENS, TTL_SECONDS, PromptCache
from agent.scripted.script import Reply, RequestInfo, Script, ScriptPlayer

__all__ = ["DISCOVERY_PATHS", "RecordedRequest", "ScriptedServer"]


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that counts and tracks connections and never prints errors."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: ScriptedServer) -> None:
        self.owner = owner
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without the reverse DNS lookup HTTPServer does."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Count the connection, disable Nagle and serve it on its own daemon thread."""
        self.owner._accepted(request)
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="scripted-conn",
            daemon=True,
        )
        self.owner._track_thread(thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection and close it."""
        self.owner._forget(request)
        try:
            super().shutdown_request(request)
        except OSError:
            pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay silent: clients hang up mid-stream on purpose in tests."""


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection: keep-alive HTTP/1.1, chunked SSE streams."""

    protocol_version = "HTTP/1.1"
    server_version = "hermes-scripted/1"
    sys_version = ""
    server: _HTTPServer
    # The stdlib's header buffer (send_header fills it; typeshed does not declare it): the
    # body is appended to it, so that headers and body leave in one write.
    _headers_buffer: list[bytes]

    def setup(self) -> None:
        """Finish the TLS handshake on this thread (not the accept loop)."""
        # The stop this connection ends at: the server's stop, or the reset that replaces
        # the script it came for (a reset gives later connections a new one).
        self.stop_event = self.owner.epoch_stop
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def handle(self) -> None:
        """Serve requests until the client or the server closes the connection."""
        try:
            super().handle()
        except (OSError, ValueError, Dropped):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    @property
    def owner(self) -> ScriptedServer:
        return self.server.owner

    def _read_body(self) -> bytes:
        """The request body (Content-Length or chunked)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _drop(self) -> None:
        """Close the TCP connection abruptly, mid-response."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise Dropped

    def _send(self, answer: Answer) -> None:
        """Write `answer`: a whole body with its headers in one write, or chunked SSE."""
        if answer.close:
            self.close_connection = True
        try:
            if answer.hold is not None:
                answer.hold()
            self.send_response(answer.status)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            if answer.chunks is None:
                self.send_header("Content-Length", str(len(answer.body)))
                self._headers_buffer.append(b"\r\n")
                self._headers_buffer.append(answer.body)
                self.flush_headers()
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            write = self.wfile.write
            for chunk in answer.chunks:
                write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            write(b"0\r\n\r\n")
        except Dropped:
            self._drop()

    def _exchange(self) -> Exchange:
        stop = self.stop_event
        return Exchange(self.owner, stop.is_set)

    def do_GET(self) -> None:
        """Health, the request log, and the discovery endpoints of the server the script plays."""
        self._send(self._exchange().answer("GET", self.path, _headers(self), b""))

    def do_POST(self) -> None:
        """Chat completions, messages, count_tokens, and opening a gate from outside."""
        raw = self._read_body()
        self._send(self._exchange().answer("POST", self.path, _headers(self), raw))


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    """Request headers with lower-cased names."""
    return {k.lower(): v for k, v in handler.headers.items()}


class ScriptedServer:
    """The scripted model server: start(), the base URLs, the request log, gates, stop()."""

    def __init__(
        self,
        script: Script | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        certfile: str | None = None,
        keyfile: str | None = None,
        *,
        listen: bool = True,
    ) -> None:
        """Bind the listening socket (TLS when certfile is given); call start() to serve.

        `listen=False` binds nothing: a subclass answers in this process
        (`InProcessScriptedServer`).
        """
        self._player = ScriptPlayer(script if script is not None else Script())
        self._lock = threading.Lock()
        # Signalled when a gate opens, or the server stops, resets or a client hangs up: what
        # a reply waiting at a gate or in a stall wakes for.
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._opened: set[str] = set()
        self._conns: set[Any] = set()
        self._threads: list[threading.Thread] = []
        self._ids = itertools.count(1)
        self._serve_thread: threading.Thread | None = None
        self.requests: list[RecordedRequest] = []
        self.probes: list[RecordedRequest] = []
        """GETs and discovery POSTs (a client asking what the server serves), apart from
        `requests` so a test counts model calls only."""
        self.connections_accepted = 0
        self._prompt_cache: PromptCache | None = None
        self.epoch = 0
        """How many times reset() gave this server a new script (its URLs name it after one)."""
        self.host = host
        self.port = port
        self._tls = certfile is not None
        if not listen:
            return
        self._httpd = _HTTPServer((host, port), self)
        if certfile is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self._httpd.socket = context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self.port = int(self._httpd.server_address[1])

    # -- public ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:PORT."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        epoch = f"{EPOCH_PREFIX}{self.epoch}" if self.epoch else ""
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}{epoch}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (url + /v1)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (it appends /v1/messages)."""
        return self.url

    @property
    def script(self) -> Script:
        """The script being played."""
        return self._player.script

    def start(self) -> ScriptedServer:
        """Serve on a background daemon thread; returns self."""
        if self._serve_thread is None:
            self._serve_thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="scripted-server",
                daemon=True,
            )
            self._serve_thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop promptly: wake stalls and gates, close sockets, join threads."""
        with self._changed:
            self._stop.set()
            self._changed.notify_all()
            conns = list(self._conns)
            threads = list(self._threads)
        if self._serve_thread is not None:
            # shutdown() waits, with no timeout, for serve_forever to notice it. A serve thread
            # stuck in accept() (a client that reset between select and accept) never would,
            # so it is asked from a helper, and a stuck accept is woken by shutting the
            # listening socket down: a stop can never hang the caller.
            threading.Thread(
                target=self._httpd.shutdown, name="scripted-server-stop", daemon=True
            ).start()
            self._serve_thread.join(timeout)
            if self._serve_thread.is_alive():
                try:
                    self._httpd.socket.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self._serve_thread.join(timeout)
        self._httpd.server_close()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(timeout)

    def set_script(self, script: Script) -> None:
        """Replace the script and reset consumption."""
        self._player.set_script(script)

    @property
    def stopped(self) -> bool:
        """Whether stop() was called (a stopped server serves nothing again)."""
        return self._serve_thread is not None and not self._serve_thread.is_alive()

    def reset(self, script: Script, timeout: float = 2.0) -> ScriptedServer:
        """Play `script` as a new server would, on the same socket: what earlier clients
        wait on is dropped (as stop() drops it), the request log, gates and counters start
        empty, and `url` names a new epoch, so an earlier client is refused (410)."""
        old_stop = self._stop
        with self._changed:
            old_stop.set()
            self._changed.notify_all()
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._stop = threading.Event()
            self._opened = set()
            self._conns = set()
            self._threads = [t for t in self._threads if t.is_alive()]
            self._ids = itertools.count(1)
            self.requests = []
            self.probes = []
            self.connections_accepted = 0
            self._prompt_cache = None
            self.epoch += 1
            self._player = ScriptPlayer(script)  # `{n}` counts from 1 again
        return self

    def open_gate(self, name: str) -> None:
        """Release every stream waiting on gate `name` (and later ones)."""
        with self._changed:
            self._opened.add(name)
            self._changed.notify_all()

    def wake(self) -> None:
        """Wake every waiting reply to look again at whether its client is still there."""
        with self._changed:
            self._changed.notify_all()

    def requests_for(self, wire: str | None = None) -> list[RecordedRequest]:
        """A snapshot of the recorded POST requests (optionally of one wire)."""
        with self._lock:
            return [
                r for r in self.requests if r.method == "POST" and (wire is None or r.wire == wire)
            ]

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what an Exchange answering a request uses ---------------------------------------------

    @property
    def epoch_stop(self) -> threading.Event:
        """Set when the current script's replies must end (stop, or the next reset)."""
        return self._stop

    def pick(self, info: RequestInfo) -> Reply | None:
        """The script's reply to a model request, or None when the script is used up."""
        return self._player.pick(info)

    def wait_gate(self, name: str, stopped: Callable[[], bool]) -> None:
        """Wait until gate `name` is open or `stopped()` (a stop, reset or hang-up)."""
        with self._changed:
            self._changed.wait_for(lambda: name in self._opened or stopped())

    def wait_until(self, stopped: Callable[[], bool], seconds: float) -> bool:
        """Wait up to `seconds` for `stopped()`; whether it came."""
        with self._changed:
            return self._changed.wait_for(stopped, seconds)

    def next_id(self) -> int:
        """The next number for a response's ids (from 1 after each reset)."""
        return next(self._ids)

    def cached_usage(self, reply: Reply, body: dict[str, Any], wire: str) -> Reply:
        """The reply with the `anthropic` or `openai` persona's cache accounting of this
        request in its usage ($1); usage the script gives for the input wins."""
        if reply.usage and ("input_tokens" in reply.usage or "prompt_tokens" in reply.usage):
            return reply
        with self._lock:
            if self._prompt_cache is None:
                extra = self.script.server.extra
                self._prompt_cache = PromptCache(
                    int(extra.get("cache_min_tokens", MIN_CACHEABLE_TOKENS)),
                    float(extra.get("cache_ttl_seconds", TTL_SECONDS)),
                )
            cache = self._prompt_cache
        if wire == "openai":
            prompt, cached = cache.account_implicit(body)
            counted: dict[str, float] = {"prompt_tokens": prompt, "cached_tokens": cached}
        else:
            counted = dict(dataclasses.asdict(cache.account(body)))
        return dataclasses.replace(reply, usage={**(reply.usage or {}), **counted})

    def record(self, request: RecordedRequest, *, probe: bool = False) -> None:
        """Log a request: in `probes` (discovery, GETs) or in `requests` (model calls)."""
        with self._lock:
            (self.probes if probe else self.requests).append(request)

    def _accepted(self, conn: Any) -> None:
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        with self._lock:
            self.connections_accepted += 1
            self._conns.add(conn)
            if self._stop.is_set():
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _forget(self, conn: Any) -> None:
        with self._lock:
            self._conns.discard(conn)

    def _track_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
