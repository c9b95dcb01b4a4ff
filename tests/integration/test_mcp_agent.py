"""MCP tools in whole turns: real MCP servers (stdio and streamable HTTP) written with the
SDK's MCPServer, the scripted model over real HTTP, real SQLite (M1, M2)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from mcp_harness import call
from mcp_servers import SECRET_IN_OUTPUT, HttpServer, stdio_entry
from waits import wait_until

from agent import events as ev
from agent.mcp import connection
from agent.mcp.connection import State


@pytest.fixture
def quick_ping(monkeypatch: pytest.MonkeyPatch) -> float:
    """A server that does not answer a ping after a timed-out call is failed after 1 s, not
    the product's 5: the waits for FAILED would otherwise sit out the ping deadline (the
    hung server never answers, so the deadline only sets how long the test waits)."""
    monkeypatch.setattr(connection, "PING_SECONDS", 1.0)
    return 1.0


def test_a_turn_calls_a_stdio_mcp_tool_and_the_model_reads_its_result(mcp):
    """M1: the server's tools are in the request as mcp__<server>__<tool>; a call's result
    goes back to the model and into the session."""
    agent = mcp.start(
        {"replies": [call("mcp__calc__add", {"a": 2, "b": 40}), {"text": "It is 42."}]},
        {"calc": stdio_entry("normal")},
    )
    result = agent.run_turn("add them")
    assert result.status == "ok", result.error
    assert "mcp__calc__add" in mcp.tools_sent(0)
    tool_message = mcp.h.bodies()[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "42"
    assert mcp.tool_rows(result.session_id)[0]["content"] == "42"


def test_a_streamable_http_server_serves_tools_the_same_way(mcp):
    """M1: a streamable-HTTP server (`url`) is a server like a stdio one."""
    server = HttpServer("normal")
    try:
        agent = mcp.start(
            {"replies": [call("mcp__web__echo", {"text": "over http"}), {"text": "done"}]},
            {"web": {"url": server.url}},
        )
        result = agent.run_turn("echo")
        assert result.status == "ok", result.error
        assert mcp.tool_rows(result.session_id)[0]["content"] == "echo: over http"
    finally:
        server.stop()


def test_results_images_structured_content_errors_and_secrets(mcp):
    """M1: an image is a note (no bytes), structured content is JSON, a tool's failure is a
    tool error (never a crashed turn), and key-shaped output is redacted like any tool's (H5)."""
    agent = mcp.start(
        {
            "replies": [
                {
                    "tool_calls": [
                        {"id": "c1", "name": "mcp__s__picture", "arguments": {}},
                        {"id": "c2", "name": "mcp__s__weather", "arguments": {"city": "Oslo"}},
                        {"id": "c3", "name": "mcp__s__fail", "arguments": {}},
                        {"id": "c4", "name": "mcp__s__secret", "arguments": {}},
                    ]
                },
                {"text": "ok"},
            ]
        },
        {"s": stdio_entry("normal")},
    )
    result = agent.run_turn("try them all")
    assert result.status == "ok", result.error
    rows = {r["tool_call_id"]: r for r in mcp.tool_rows(result.session_id)}
    assert "a red dot" in rows["c1"]["content"]
    assert "[image: image/png" in rows["c1"]["content"] and "iVBOR" not in rows["c1"]["content"]
    assert json.loads(rows["c2"]["content"]) == {"city": "Oslo", "celsius": 21}
    assert rows["c3"]["display_metadata"]["ok"] is False
    assert "Error executing tool fail" in rows["c3"]["content"]
    assert SECRET_IN_OUTPUT not in rows["c4"]["content"]
    assert SECRET_IN_OUTPUT not in json.dumps(mcp.h.bodies()[-1])


def test_start_up_does_not_wait_and_a_hung_server_does_not_block_the_turn(mcp):
    """M1: servers start in the background (attaching returns at once even with a server
    that never answers initialize); the first turn waits, visibly, only up to
    `mcp.turn_wait_seconds`, then runs without the hung server's tools."""
    started = time.monotonic()
    agent = mcp.start(
        {"replies": [{"text": "no tools needed"}]},
        {"hung": stdio_entry("hang_init"), "ok": stdio_entry("normal")},
        mcp={"turn_wait_seconds": 1.0, "startup_timeout_seconds": 60},
        wait=False,
    )
    # A quarter of the hung server's 60 s start-up bound: waiting for it would cost all 60.
    assert time.monotonic() - started < 15.0
    assert agent.mcp.get("hung").state == State.STARTING
    wait_until(lambda: agent.mcp.get("ok").state == State.READY, timeout=20)
    result = agent.run_turn("hello")
    assert result.status == "ok", result.error
    waits = [e for e in mcp.h.events if isinstance(e, ev.McpWaiting)]
    assert waits[0].names and "hung" in waits[0].names and waits[-1].names == ()
    sent = mcp.tools_sent(0)
    assert "mcp__ok__echo" in sent and not any(n.startswith("mcp__hung__") for n in sent)


def test_a_server_that_hangs_on_initialize_fails_with_its_stderr(mcp):
    """M1: a server that never finishes starting is failed after its start-up timeout, with
    the last line it wrote to stderr."""
    agent = mcp.start(
        {"replies": [{"text": "x"}]},
        # Long enough for a loaded machine to start Python and print the stderr line.
        {"hung": stdio_entry("hang_init", startup_timeout_seconds=3)},
        wait=False,
    )
    server = agent.mcp.get("hung")
    wait_until(lambda: server.state == State.FAILED, timeout=10)
    assert "within 3 s" in server.error and "never answering" in server.error


def test_a_server_stopped_at_its_start_up_timeout_is_failed_with_its_last_words(mcp):
    """M1: the failure names what the server wrote to stderr as it was stopped (the pipe
    is read to its end before the failure is said)."""
    agent = mcp.start(
        {"replies": [{"text": "x"}]},
        {"late": stdio_entry("hang_init_last_words", startup_timeout_seconds=1)},
        wait=False,
    )
    server = agent.mcp.get("late")
    wait_until(lambda: server.state == State.FAILED, timeout=10)
    assert "within 1 s" in server.error and "giving up as I am stopped" in server.error


def test_a_crashed_server_leaves_the_request_and_can_be_restarted(mcp):
    """M1: a server that dies mid-call gives a tool error, is marked failed with its stderr's
    last line, its tools leave the next request, and a restart brings them back."""
    agent = mcp.start(
        {
            "replies": [
                {"match": {"last_role": "user"}, **call("mcp__c__crash")},
                {"match": {"last_role": "tool"}, "text": "it crashed"},
            ]
        },
        {"c": stdio_entry("crash")},
    )
    result = agent.run_turn("crash it")
    assert result.status == "ok", result.error
    server = agent.mcp.get("c")
    wait_until(lambda: server.state == State.FAILED, timeout=10)
    assert "crash tool was called" in server.error
    assert mcp.tool_rows(result.session_id)[0]["display_metadata"]["ok"] is False
    assert "mcp__c__echo" not in mcp.tools_sent(-1)
    notices = [e.text for e in mcp.h.events if isinstance(e, ev.Notice)]
    assert any("MCP server c failed" in text for text in notices)
    agent.mcp.restart("c")
    wait_until(lambda: server.state == State.READY, timeout=20)
    before = len(mcp.h.bodies())
    agent.run_turn("again")
    assert "mcp__c__echo" in mcp.tools_sent(before)


def test_a_hung_tool_call_times_out_and_the_server_is_failed(mcp, quick_ping):
    """M1: a call past its timeout is a tool error; a server that then does not answer a
    ping is failed (and its process stopped); the turn goes on."""
    agent = mcp.start(
        {
            "replies": [
                {"match": {"last_role": "user"}, **call("mcp__h__hang")},
                {"match": {"last_role": "tool"}, "text": "it hung"},
            ]
        },
        {"h": stdio_entry("hang_call", timeout_seconds=1)},
    )
    started = time.monotonic()
    result = agent.run_turn("hang")
    assert result.status == "ok" and result.text == "it hung"
    # The call never returns: the turn ending at all is the timeout's work (the row below
    # names its 1 s); the bound says it did not hang, with room for a loaded machine.
    assert time.monotonic() - started < 30
    assert "timed out after 1 s" in mcp.tool_rows(result.session_id)[0]["content"]
    server = agent.mcp.get("h")
    wait_until(lambda: server.state == State.FAILED, timeout=60)
    assert f"no reply to a ping within {quick_ping:g} s" in server.error


def test_a_stop_ends_a_running_mcp_call_within_a_second(mcp):
    """M1, H6: a stop during a hung MCP call ends the call (and the turn) promptly."""
    agent = mcp.start(
        {"replies": [call("mcp__h__hang"), {"text": "never"}]},
        {"h": stdio_entry("hang_call", timeout_seconds=60)},
    )
    results = []
    worker = threading.Thread(target=lambda: results.append(agent.run_turn("hang")))
    worker.start()
    wait_until(lambda: any(isinstance(e, ev.ToolStarted) for e in mcp.h.events), timeout=10)
    stopped = time.monotonic()
    agent.stop()
    worker.join(30)
    # The call's own timeout is a minute: a stop that did not end the call would wait it out.
    # H6's second is the MCP wait's poll step, held by tests/unit/agent/test_stop_budget.py
    # (a wall-clock second here would fail on a loaded machine, not on a slow stop).
    assert time.monotonic() - stopped < 15
    assert results[0].status == "stopped"


def test_a_changed_tool_list_is_in_the_next_model_call(mcp):
    """M1: notifications/tools/list_changed is picked up between model calls."""
    agent = mcp.start(
        {
            "replies": [
                {"match": {"last_role": "user"}, **call("mcp__g__grow")},
                {"match": {"last_role": "tool"}, "text": "grown"},
            ]
        },
        {"g": stdio_entry("changing")},
    )
    assert "mcp__g__grown" not in agent.registry.names()
    result = agent.run_turn("grow")
    assert result.status == "ok", result.error
    # The change told during the call is in the very next model call of the same turn.
    assert "mcp__g__grown" in mcp.tools_sent(1)
    assert "mcp__g__grown" not in mcp.tools_sent(0)


def test_http_servers_that_change_crash_and_hang(mcp, quick_ping):
    """M1 over streamable HTTP: a changed tool list is in the next model call, a crashed
    server is failed and leaves the request, a hung call times out and the server is failed."""
    servers = {mode: HttpServer(mode) for mode in ("changing", "crash", "hang_call")}
    try:
        agent = mcp.start(
            {
                "replies": [
                    {
                        "match": {"last_role": "user", "last_user_contains": "grow"},
                        **call("mcp__g__grow"),
                    },
                    {
                        "match": {"last_role": "user", "last_user_contains": "crash"},
                        **call("mcp__c__crash"),
                    },
                    {
                        "match": {"last_role": "user", "last_user_contains": "hang"},
                        **call("mcp__h__hang"),
                    },
                    {"match": {"last_role": "tool"}, "text": "done"},
                ]
            },
            {
                "g": {"url": servers["changing"].url},
                "c": {"url": servers["crash"].url},
                "h": {"url": servers["hang_call"].url, "timeout_seconds": 1},
            },
        )
        assert agent.run_turn("grow").status == "ok"
        assert "mcp__g__grown" in mcp.tools_sent(1)
        crashed = agent.run_turn("crash")
        assert crashed.status == "ok" and crashed.text == "done"
        assert mcp.tool_rows(crashed.session_id)[-1]["display_metadata"]["ok"] is False
        wait_until(lambda: agent.mcp.get("c").state == State.FAILED, timeout=60)
        hung = agent.run_turn("hang")
        assert hung.status == "ok" and hung.text == "done"
        assert "timed out after 1 s" in mcp.tool_rows(hung.session_id)[-1]["content"]
        assert "mcp__c__echo" not in mcp.tools_sent(-1)
        wait_until(lambda: agent.mcp.get("h").state == State.FAILED, timeout=60)
    finally:
        for server in servers.values():
            server.stop()


def test_tool_search_keeps_big_tool_sets_out_of_the_request_until_loaded(mcp):
    """M2: over the budget, the request carries `mcp_tool_search` (names and one line each)
    instead of 60 schemas; the tools the model loads are sent for the rest of the turn, and
    the next turn starts lean again. The request is much smaller."""
    agent = mcp.start(
        {
            "replies": [
                call("mcp_tool_search", {"names": ["mcp__many__tool_03"]}, "s1"),
                call("mcp__many__tool_03", {"query": "cats"}, "t1"),
                {"text": "found cats"},
                {"text": "no tools this time"},
            ]
        },
        {"many": stdio_entry("many")},
        mcp={"max_schema_tokens": 2000},
    )
    result = agent.run_turn("find cats")
    assert result.status == "ok", result.error
    first, second, third = (mcp.tools_sent(i) for i in range(3))
    assert "mcp_tool_search" in first and not any(n.startswith("mcp__many") for n in first)
    tools = mcp.h.bodies()[0]["tools"]
    search = next(t["function"] for t in tools if t["function"]["name"] == "mcp_tool_search")
    assert "mcp__many__tool_59: Tool number 59." in search["description"]
    assert "mcp__many__tool_03" in second and "mcp__many__tool_04" not in second
    assert "mcp__many__tool_03" in third
    assert "result 3 for cats" in mcp.tool_rows(result.session_id)[1]["content"]
    before = len(mcp.h.bodies())
    agent.run_turn("again")
    assert not any(n.startswith("mcp__many") for n in mcp.tools_sent(before))
    lean = len(json.dumps(agent.registry.schemas()))
    agent.mcp.settings = type(agent.mcp.settings)(max_schema_tokens=10**9)
    full = len(json.dumps(agent.registry.schemas()))
    assert full > 3 * lean


def test_tool_search_over_hundreds_of_tools_stays_within_the_budget(mcp):
    """M2: when even the one-line list would pass the budget (512 tools), the search tool
    names the servers and their counts (or the bare names); a query still finds a tool."""
    agent = mcp.start(
        {
            "replies": [
                call("mcp_tool_search", {"query": "t42"}, "s1"),
                call("mcp__h__t42", {}, "t1"),
                {"text": "done"},
            ]
        },
        {"h": stdio_entry("huge_list")},
        mcp={"max_schema_tokens": 1000},
    )
    result = agent.run_turn("find t42")
    assert result.status == "ok", result.error
    tools = mcp.h.bodies()[0]["tools"]
    search = next(t["function"] for t in tools if t["function"]["name"] == "mcp_tool_search")
    assert len(json.dumps(search)) < 4 * 1000 and "h (512 tools)" in search["description"]
    assert "mcp__h__t42" in mcp.tools_sent(1)
    assert mcp.tool_rows(result.session_id)[1]["content"] == "x"
    agent.mcp.settings = type(agent.mcp.settings)(max_schema_tokens=3000)
    names = next(s for s in agent.registry.schemas() if s["name"] == "mcp_tool_search")
    assert "too many to describe" in names["description"] and "mcp__h__t500" in names["description"]
    assert len(json.dumps(names)) < 4 * 3000
