"""`hermes-tui run` with MCP servers: the same runtime as the TUI (M1, M2, U6)."""

from __future__ import annotations

import json

import yaml
from helpers import write_config
from mcp_servers import stdio_entry
from test_headless_errors import run_cli

from agent.scripted import Script, ScriptedServer


def serve_with_servers(home, replies, servers, **agent):
    server = ScriptedServer(Script.from_dict({"replies": replies})).start()
    path = write_config(home, server, agent=agent)
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"] = servers
    # A loaded machine may take seconds to start a Python server: the run waits for it.
    data["mcp"] = {"turn_wait_seconds": 60}
    path.write_text(yaml.safe_dump(data))
    return server


def echo_call(text="hi"):
    return {"tool_calls": [{"id": "e", "name": "mcp__s__echo", "arguments": {"text": text}}]}


def test_a_headless_run_uses_an_mcp_tool_and_exits_cleanly(hermes_home, tmp_path):
    """M1, U6: the run waits for the server, calls its tool, prints the answer, exits 0."""
    server = serve_with_servers(
        hermes_home, [echo_call(), {"text": "The server said hi."}], {"s": stdio_entry("normal")}
    )
    try:
        proc = run_cli(hermes_home, "run", "--json", "say hi", cwd=tmp_path)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "ToolFinished"]
    assert finished[0]["ok"] and finished[0]["output"] == "echo: hi"
    assert any(e["type"] == "McpStatus" and e["state"] == "ready" for e in events)


def test_headless_in_ask_mode_refuses_an_mcp_call_without_yes(hermes_home, tmp_path):
    """M2: without --yes, ask mode refuses the MCP call; with --yes it runs."""
    replies = [echo_call(), {"text": "done"}]
    server = serve_with_servers(
        hermes_home, replies * 2, {"s": stdio_entry("normal")}, approval="ask"
    )
    try:
        refused = run_cli(hermes_home, "run", "--json", "say hi", cwd=tmp_path)
        allowed = run_cli(hermes_home, "run", "--json", "--yes", "say hi", cwd=tmp_path)
    finally:
        server.stop()
    outputs = []
    for proc in (refused, allowed):
        assert proc.returncode == 0, proc.stderr
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        outputs.append(next(e for e in events if e["type"] == "ToolFinished")["output"])
    assert "approval" in outputs[0] and outputs[1] == "echo: hi"


def test_a_project_server_is_not_started_headless_without_consent(hermes_home, tmp_path):
    """M1: a .mcp.json server needs the user's consent first; the run says so and goes on."""
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": stdio_entry("normal")}}))
    server = serve_with_servers(hermes_home, [{"text": "fine"}], {})
    try:
        proc = run_cli(hermes_home, "run", "hello", cwd=tmp_path)
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "fine"
    assert "have not allowed: p" in proc.stderr and "Traceback" not in proc.stderr
    tools = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert not any(name.startswith("mcp__p__") for name in tools)
