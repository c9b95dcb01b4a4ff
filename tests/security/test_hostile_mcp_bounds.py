"""A hostile MCP server's result over the 16 MB message bound fails that call at once, with
a sentence naming the bound, on stdio and on streamable HTTP; the server stays usable, and a
line that never ends fails the server with its reason (H10)."""

from __future__ import annotations

import time

import pytest
from mcp_servers import HttpServer, stdio_entry
from security.test_hostile_mcp import manager_for
from waits import wait_until

from agent.mcp.connection import State
from agent.mcp.stdio import NO_LINE_END, RESULT_TOO_LONG

TIMEOUT = 60.0
"""The calls' own timeout: an answer that arrives well before it did not wait it out."""


@pytest.fixture(params=["stdio", "http"])
def huge_server(request, hermes_home, tmp_path):
    http = None
    if request.param == "stdio":
        entry = stdio_entry("huge_result")
    else:
        http = HttpServer("huge_result")
        entry = {"url": http.url}
    manager = manager_for(hermes_home, tmp_path, {"h": entry})
    try:
        server = manager.get("h")
        wait_until(lambda: server.state != State.STARTING, timeout=30, what="the server started")
        assert server.state == State.READY, server.error
        yield manager
    finally:
        manager.close()
        if http is not None:
            http.stop()


def test_a_17_mb_result_fails_that_call_at_once_and_the_server_goes_on(huge_server):
    """H10: the call ends in seconds, not after its timeout, saying "result over 16 MB"; the
    next call on the same server answers."""
    manager = huge_server
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        manager.call_tool("h", "huge", {}, timeout=TIMEOUT, cancel=None)
    took = time.monotonic() - started
    assert RESULT_TOO_LONG in str(caught.value), caught.value
    assert "result over 16 MB" in str(caught.value)
    assert took < TIMEOUT / 4, took
    assert manager.get("h").state == State.READY
    result = manager.call_tool("h", "add", {"a": 20, "b": 22}, timeout=10, cancel=None)
    assert result.content[0].text == "42"


def test_a_result_that_never_ends_fails_the_call_then_the_server_with_its_reason(
    hermes_home, tmp_path
):
    """H10: the call fails at the bound at once; the server, whose stdout cannot be read on,
    is failed with that reason instead of hanging every later call."""
    manager = manager_for(hermes_home, tmp_path, {"h": stdio_entry("huge_result")})
    try:
        server = manager.get("h")
        wait_until(lambda: server.state != State.STARTING, timeout=30, what="the server started")
        started = time.monotonic()
        with pytest.raises(Exception) as caught:
            manager.call_tool("h", "endless", {}, timeout=TIMEOUT, cancel=None)
        assert RESULT_TOO_LONG in str(caught.value)
        assert time.monotonic() - started < TIMEOUT / 4
        wait_until(lambda: server.state == State.FAILED, timeout=30, what="the server failed")
        assert NO_LINE_END in server.error
    finally:
        manager.close()
