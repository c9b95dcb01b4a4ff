"""A small HTTP server on 127.0.0.1 for web_fetch tests: pages, redirects, a huge lazy body."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "web"
BIG_BYTES = 50 * 1024 * 1024
ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 \x1b[2J \x9b2J \r"


class _Handler(BaseHTTPRequestHandler):
    server: WebServer

    def log_message(self, *args: object) -> None:
        """Quiet: the tests read `server.paths` instead."""

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            self._send(404, "text/plain", b"not here")
        else:
            route(self)

    def _send(self, status: int, content_type: str, body: bytes, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def _docs(handler: _Handler) -> None:
    handler._send(200, "text/html; charset=utf-8", (FIXTURES / "docs.html").read_bytes())


def _hostile(handler: _Handler) -> None:
    page = f"<html><body><h1>Title {ESCAPES} here</h1><p>text {ESCAPES} end</p></body></html>"
    handler._send(200, "text/html; charset=utf-8", page.encode())


def _big(handler: _Handler) -> None:
    """50 MB of HTML, written a chunk at a time: the client's close ends it early."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(BIG_BYTES))
    handler.end_headers()
    chunk = b"<p>" + b"lorem ipsum dolor " * 3600 + b"</p>\n"
    sent = 0
    try:
        while sent < BIG_BYTES:
            piece = chunk[: BIG_BYTES - sent]
            handler.wfile.write(piece)
            sent += len(piece)
            handler.server.big_sent = sent
    except (BrokenPipeError, ConnectionResetError):
        pass


def trickle(every: float):
    """A route that sends its headers, then one byte each `every` seconds of a body it never
    finishes: only the client's deadline or stop ends it (or the server's stop)."""

    def route(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        handler.wfile.flush()
        handler.server.trickling.set()
        try:
            while not handler.server.closing.wait(every):
                handler.wfile.write(b"x")
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    return route


def _png(handler: _Handler) -> None:
    handler._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(64))


def _json(handler: _Handler) -> None:
    handler._send(200, "application/json", b'{"name": "tidewater", "version": "2.4"}')


def redirect(to: str):
    """A route that answers 302 to `to` (a path or a URL; `{port}` is this server's port)."""

    def route(handler: _Handler) -> None:
        target = to.format(port=handler.server.server_address[1])
        handler._send(302, "text/plain", b"moved", Location=target)

    return route


class WebServer(ThreadingHTTPServer):
    """The server, its routes (path -> handler function) and the paths it was asked for."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.paths: list[str] = []
        self.big_sent = 0
        self.trickling = threading.Event()
        """Set once a trickling route has sent its headers."""
        self.closing = threading.Event()
        """Set by `stop`: a trickling route ends."""
        self.routes = {
            "/docs": _docs,
            "/hostile": _hostile,
            "/big": _big,
            "/shot.png": _png,
            "/data.json": _json,
            "/moved": redirect("/docs"),
            "/to-localhost": redirect("http://localhost:{port}/docs"),
            "/to-mapped": redirect("http://[::ffff:127.0.0.1]:{port}/docs"),
            "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
            "/loop": redirect("/loop"),
            "/trickle": trickle(0.3),
            "/trickle-slow": trickle(60.0),
        }
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """The URL of `path` on this server, through `host`."""
        return f"http://{host}:{self.port}{path}"

    def start(self) -> WebServer:
        """Serve on a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.closing.set()
        self.shutdown()
        self.server_close()
