"""A hostile streamable-HTTP MCP server: an answer that never ends is cut at the same bound
as a stdio server's line, the server is failed with a sentence, nothing grows without bound
(H6, M1)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from security.test_hostile_mcp import manager_for
from waits import wait_until

from agent.mcp.connection import State
from agent.mcp.stdio import MAX_LINE_BYTES

CHUNK = b"x" * (1024 * 1024)
SENT_AT_MOST = 4 * MAX_LINE_BYTES


class EndlessAnswer(BaseHTTPRequestHandler):
    """Answers every POST with 200 and a JSON body of one line that goes on and on."""

    protocol_version = "HTTP/1.0"  # a body delimited by the connection's close: no length
    sent = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            while EndlessAnswer.sent < SENT_AT_MOST:
                self.wfile.write(CHUNK)
                EndlessAnswer.sent += len(CHUNK)
        except OSError:
            return  # the client hung up: what we want

    def log_message(self, *args):
        return


def test_an_endless_http_answer_is_cut_and_the_server_failed(hermes_home, tmp_path):
    """H6: the client stops reading one answer at 16 MB without a line break (as a stdio
    line), so the server sent far less than it wanted to; it is failed with a sentence."""
    EndlessAnswer.sent = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), EndlessAnswer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    manager = manager_for(hermes_home, tmp_path, {"big": {"url": url}})
    try:
        server = manager.get("big")
        wait_until(lambda: server.state == State.FAILED, timeout=60, what="the server failed")
        assert "over 16 MB" in server.error and "validation" not in server.error, server.error
        assert EndlessAnswer.sent < 2 * MAX_LINE_BYTES + 8 * len(CHUNK), EndlessAnswer.sent
    finally:
        manager.close()
        httpd.shutdown()


class Silent(BaseHTTPRequestHandler):
    """Reads every POST and never answers (until the test releases it)."""

    release = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Silent.release.wait(60)

    def log_message(self, *args):
        return


def test_an_http_server_that_never_answers_initialize_is_failed_in_time(hermes_home, tmp_path):
    """M1: an HTTP server that takes the request and says nothing is failed after its
    start-up timeout, with a sentence; closing does not wait for it."""
    import time

    Silent.release.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    entry = {"url": url, "startup_timeout_seconds": 1}
    manager = manager_for(hermes_home, tmp_path, {"mute": entry})
    try:
        server = manager.get("mute")
        wait_until(lambda: server.state == State.FAILED, timeout=20, what="the server failed")
        assert "did not finish starting within 1 s" in server.error
    finally:
        started = time.monotonic()
        manager.close(timeout=3.0)
        # The silent server holds its request until released (after this): a close that
        # waited for it would never return; 15 s is the close's 5 s bound and a loaded
        # machine's slack.
        assert time.monotonic() - started < 15
        Silent.release.set()
        httpd.shutdown()
