"""The scripted model server: a threaded stdlib HTTP server speaking OpenAI and Anthropic SSE."""

from __future__ import annotations

import dataclasses
import itertools
import json
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.scripted import wire_anthropic, wire_openai, wire_raw
from agent.scripted.images import SeenImage, image_parts
from agent.scripted.personas import ANTHROPIC, OPENAI
from agent.scripted.prompt_cache import MIN_CACHEABLE_TOKENS, TTL_SECONDS, PromptCache
from agent.scripted.script import EXHAUSTED_MESSAGE, Reply, RequestInfo, Script, ScriptPlayer

_OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
_ANTHROPIC_PATHS = ("/v1/messages", "/messages")
_COUNT_TOKENS_PATHS = ("/v1/messages/count_tokens", "/messages/count_tokens")
DISCOVERY_PATHS = frozenset({"/api/show", "/api/tags", "/props", "/api/v0/models", "/v1/models"})
"""Where clients ask a server what it serves: recorded in `probes`, never in `requests`."""
# POST here opens a gate from outside the process (a test driving `hermes-tui
# scripted-server` in its own process); it is not recorded as a model request.
_OPEN_GATE_PREFIX = "/_control/open_gate/"
_REQUESTS_PATH = "/_control/requests"
"""GET here lists the model requests' bodies so far (a test reading another process's log)."""
_EPOCH_PREFIX = "/_epoch/"
"""A reset server's URLs start /_epoch/N/: a client of an earlier script (a test's leftover
worker) is told its script is gone instead of playing the next test's replies."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes
    wire: str

    @property
    def images(self) -> list[SeenImage]:
        """The image parts the request carried (G4), decoded."""
        return image_parts(self.body, self.wire)


class _Abort(Exception):
    """The stream must end by closing the connection (drop, stop during a wait)."""


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
        self.stop_event = self.owner._stop
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def handle(self) -> None:
        """Serve requests until the client or the server closes the connection."""
        try:
            super().handle()
        except (OSError, ValueError, _Abort):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    # -- helpers ---------------------------------------------------------------------------

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

    def _send_json(
        self, status: int, body: dict[str, Any], extra_headers: dict[str, str] | None = None
    ) -> None:
        """Send a complete JSON response with Content-Length, in one write."""
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self._headers_buffer.append(b"\r\n")
        self._headers_buffer.append(data)
        self.flush_headers()

    def _send_error(self, wire: str, status: int, reply: Reply | None, message: str) -> None:
        """A provider-shaped error response."""
        if reply is not None and reply.error_body is not None:
            body = reply.error_body
        elif wire == "anthropic":
            body = wire_anthropic.error_body(status, message, reply.error_type if reply else None)
        else:
            body = wire_openai.error_body(
                status,
                message,
                reply.error_type if reply else None,
                reply.error_code if reply else None,
            )
        headers = {}
        if reply is not None and reply.retry_after is not None:
            value = reply.retry_after
            headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
        if wire == "anthropic":
            headers["request-id"] = f"req_scripted_{self.owner._next_id()}"
        else:
            headers["x-request-id"] = f"req_scripted_{self.owner._next_id()}"
        self._send_json(status, body, headers)

    def _drop(self) -> None:
        """Close the TCP connection abruptly, mid-response."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise _Abort

    def _wait(self, seconds: float) -> None:
        """Wait, interruptibly by stop()."""
        if seconds and seconds > 0 and self.stop_event.wait(seconds):
            self._drop()

    def _knobs_at(self, reply: Reply, sent: int) -> None:
        """Apply gate, stall, drop and malformed knobs before chunk number `sent`."""
        if reply.gate is not None and sent == (reply.gate_after or 0):
            self.owner._wait_gate(reply.gate)
            if self.stop_event.is_set():
                self._drop()
        if reply.stall and sent == (reply.stall_after or 0):
            self._wait(reply.stall)
        if reply.drop_after is not None and sent == reply.drop_after:
            self._drop()

    def _stream(self, reply: Reply, events: Iterator[bytes], wire: str) -> None:
        """Send events as a chunked SSE response, applying the reply's knobs."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        rid = f"req_scripted_{self.owner._next_id()}"
        self.send_header("request-id" if wire == "anthropic" else "x-request-id", rid)
        self.end_headers()
        write = self.wfile.write
        delay = reply.delay or 0.0
        knobs = bool(
            reply.gate is not None
            or reply.stall
            or reply.drop_after is not None
            or reply.malformed_after is not None
        )
        malformed = (
            wire_anthropic.MALFORMED_CHUNK if wire == "anthropic" else wire_openai.MALFORMED_CHUNK
        )
        stop = self.stop_event
        sent = 0
        for event in events:
            if knobs:
                self._knobs_at(reply, sent)
                if reply.malformed_after is not None and sent == reply.malformed_after:
                    write(b"%x\r\n%s\r\n" % (len(malformed), malformed))
            if delay and sent and stop.wait(delay):
                self._drop()
            write(b"%x\r\n%s\r\n" % (len(event), event))
            sent += 1
        if knobs:
            self._knobs_at(reply, sent)
        write(b"0\r\n\r\n")

    def _before_body(self, reply: Reply) -> None:
        """Knobs for non-streaming replies: gate, stall and drop act before the body."""
        if reply.gate is not None:
            self.owner._wait_gate(reply.gate)
            if self.stop_event.is_set():
                self._drop()
        if reply.stall:
            self._wait(reply.stall)
        if reply.drop_after is not None:
            self._drop()

    # -- routes ----------------------------------------------------------------------------

    def _control(self, path: str) -> bool:
        """Serve a control route (open a gate); False when `path` is not one."""
        gate = path.removeprefix(_OPEN_GATE_PREFIX)
        if not gate or gate == path:
            return False
        self.owner.open_gate(gate)
        self._send_json(200, {"opened": gate})
        return True

    def _in_epoch(self) -> bool:
        """Take a reset server's /_epoch/N prefix off the path; False (answered 410) when N
        is an earlier script's."""
        if not self.path.startswith(_EPOCH_PREFIX):
            return True
        epoch, _, rest = self.path[len(_EPOCH_PREFIX) :].partition("/")
        if epoch != str(self.owner.epoch):
            self.close_connection = True
            self._send_json(410, {"error": {"message": "scripted server: script replaced"}})
            return False
        self.path = "/" + rest
        return True

    def do_GET(self) -> None:
        """Health, the request log, and the discovery endpoints of the server the script plays."""
        if not self._in_epoch():
            return
        path = self.path.split("?", 1)[0]
        if path == _REQUESTS_PATH:
            self._send_json(200, {"requests": [r.body for r in self.owner.requests]})
            return
        self.owner._record(
            RecordedRequest("GET", self.path, _headers(self), None, b"", _wire_of(path)), probe=True
        )
        persona = self.owner.script.server
        answer = persona.get(path)
        if answer is not None:
            self._send_body(*answer)
        elif path in ("/", "/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._no_route(path, "GET")

    def _no_route(self, path: str, method: str) -> None:
        """A path this server does not serve: the persona's own 404, else a generic one."""
        answer = self.owner.script.server.not_found(path, method)
        if answer is not None:
            self._send_body(*answer)
        else:
            self._send_error(_wire_of(path), 404, None, f"scripted server: no route {path}")

    def _send_body(self, status: int, body: dict[str, Any] | str) -> None:
        """A JSON body, or a plain-text one."""
        if isinstance(body, dict):
            self._send_json(status, body)
            return
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self._headers_buffer.append(b"\r\n")
        self._headers_buffer.append(data)
        self.flush_headers()

    def do_POST(self) -> None:
        """Chat completions, messages, count_tokens, and opening a gate from outside."""
        raw = self._read_body()
        if not self._in_epoch():
            return
        path = self.path.split("?", 1)[0]
        if self._control(path):
            return
        wire = _wire_of(path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        persona = self.owner.script.server
        recorded = RecordedRequest("POST", self.path, _headers(self), body, raw, wire)
        discovery = persona.post(path, body)
        self.owner._record(recorded, probe=discovery is not None or path in DISCOVERY_PATHS)
        if discovery is not None:
            self._send_body(*discovery)
            return
        if raw and body is None:
            self._send_error(wire, 400, None, "scripted server: request body is not JSON")
            return
        if path in _COUNT_TOKENS_PATHS:
            self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path not in _OPENAI_PATHS and path not in _ANTHROPIC_PATHS:
            self._no_route(path, "POST")
            return
        info = RequestInfo.from_body(wire, body, raw)
        reply = self.owner._player.pick(info)
        if reply is None:
            self._send_error(wire, 500, None, EXHAUSTED_MESSAGE)
            return
        if reply.server_error is not None:
            status, error = persona.error(reply.server_error, info.model, max(1, len(raw) // 4))
            self._send_body(status, error)
            return
        if reply.status is not None and reply.status >= 400:
            message = reply.error_message or f"scripted server: HTTP {reply.status}"
            if reply.gate is not None:
                self._before_body(reply)  # an error can wait at a gate too (held mid-request)
            self._send_error(wire, reply.status, reply, message)
            return
        if reply.raw_sse is not None:
            self._stream(reply, wire_raw.raw_chunks(reply.raw_sse), wire)
            return
        if persona.name == {"anthropic": ANTHROPIC, "openai": OPENAI}[wire] and isinstance(
            body, dict
        ):
            reply = self.owner._cached_usage(reply, body, wire)
        self._send_reply(reply, info, wire)

    def _send_reply(self, reply: Reply, info: RequestInfo, wire: str) -> None:
        """A scripted answer (streamed or whole) on `wire`."""
        rid = self.owner._next_id()
        if wire == "anthropic":
            msg_id = f"msg_scripted_{rid}"
            if info.stream:
                self._stream(reply, wire_anthropic.stream_events(reply, info, msg_id), wire)
            else:
                self._before_body(reply)
                self._send_json(200, wire_anthropic.message_body(reply, info, msg_id))
        else:
            key = self.owner.script.reasoning_key
            cid = f"chatcmpl-scripted-{rid}"
            if info.stream:
                self._stream(reply, wire_openai.stream_events(reply, info, cid, key), wire)
            else:
                self._before_body(reply)
                self._send_json(200, wire_openai.completion_body(reply, info, cid, key))


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    """Request headers with lower-cased names."""
    return {k.lower(): v for k, v in handler.headers.items()}


def _wire_of(path: str) -> str:
    """Which wire a path belongs to."""
    return "anthropic" if path.startswith(("/v1/messages", "/messages")) else "openai"


class ScriptedServer:
    """The scripted model server: start(), the base URLs, the request log, gates, stop()."""

    def __init__(
        self,
        script: Script | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        certfile: str | None = None,
        keyfile: str | None = None,
    ) -> None:
        """Bind the listening socket (TLS when certfile is given); call start() to serve."""
        self._player = ScriptPlayer(script if script is not None else Script())
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._gates: dict[str, threading.Event] = {}
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
        self._httpd = _HTTPServer((host, port), self)
        self._tls = certfile is not None
        if certfile is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self._httpd.socket = context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self.host = host
        self.port = int(self._httpd.server_address[1])

    # -- public ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:PORT."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        epoch = f"{_EPOCH_PREFIX}{self.epoch}" if self.epoch else ""
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
        self._stop.set()
        with self._lock:
            for gate in self._gates.values():
                gate.set()
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
        with self._lock:
            old_stop.set()
            for gate in self._gates.values():
                gate.set()
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
            self._gates = {}
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
        self._gate(name).set()

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

    # -- internals used by the handler -------------------------------------------------------

    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            gate = self._gates.get(name)
            if gate is None:
                gate = self._gates[name] = threading.Event()
                if self._stop.is_set():
                    gate.set()
            return gate

    def _wait_gate(self, name: str) -> None:
        self._gate(name).wait()

    def _next_id(self) -> int:
        return next(self._ids)

    def _cached_usage(self, reply: Reply, body: dict[str, Any], wire: str) -> Reply:
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

    def _record(self, request: RecordedRequest, *, probe: bool = False) -> None:
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
