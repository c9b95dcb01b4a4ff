"""MCP in the app (M1, M2): start-up never waits for a server, the status panel and the /mcp
panel show their states, prompts are slash commands, and the approval dialog offers
"always for this project"."""

from __future__ import annotations

import yaml
from mcp_servers import stdio_entry
from textual.widgets import Button, OptionList, Static
from ui.tui_helpers import answer_approval, approval_dialog, reply, run_turn, type_keys
from waits import wait_until

from agent.config import load_config
from agent.mcp.connection import State
from hermes_tui.screens.mcp import McpScreen
from hermes_tui.widgets.messages import NoticeLine

SIZE = (120, 36)


def with_servers(app, home, servers, mcp=None):
    """The app `make_app` built, with `servers` (and `mcp:` settings) in its config.yaml."""
    path = home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"] = servers
    if mcp:
        data["mcp"] = mcp
    path.write_text(yaml.safe_dump(data))
    app.config = load_config()
    return app


def manager(app):
    return app.runtime.mcp


def notices(app):
    return " ".join(line.text for line in app.transcript.query(NoticeLine))


async def test_start_up_never_waits_for_a_hung_server(make_app, scripted_in_process, hermes_home):
    """M1: the app is up (store, agent, composer) while a server still hangs in initialize;
    the status panel says so."""
    server = scripted_in_process({"replies": [reply("hi")]})
    app = with_servers(make_app(server), hermes_home, {"hung": stdio_entry("hang_init")})
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        # Still starting, and it never finishes: ready did not wait for it (a bound in
        # seconds here would only measure how loaded the machine is).
        assert manager(app).get("hung").state == State.STARTING
        await wait_until(pilot, lambda: "MCP 0/1 ready · 1 starting" in app.status_panel.text)


async def test_a_turn_shows_the_servers_it_waits_for_then_goes_on(
    make_app, scripted_in_process, hermes_home
):
    """M1: the first turn waits for a server still starting, and the status panel names it
    meanwhile; once that server stops starting (here: turned off) the turn runs without
    its tools. (The wait's own bound, `mcp.turn_wait_seconds`: tests/integration.)"""
    import asyncio

    server = scripted_in_process({"replies": [reply("answered anyway")]})
    servers = {"hung": stdio_entry("hang_init")}
    app = with_servers(make_app(server), hermes_home, servers, {"turn_wait_seconds": 60})
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("hello")
        await wait_until(
            pilot, lambda: "waiting for MCP servers to start: hung" in app.status_panel.text
        )
        assert not server.requests  # the turn waits: nothing was sent yet
        await asyncio.to_thread(manager(app).disable, "hung")
        await app.wait_for_turn(20)
        assert len(server.requests) == 1 and manager(app).get("hung").state == State.DISABLED
        tools = [t["function"]["name"] for t in server.requests[-1].body.get("tools", [])]
        assert not any(name.startswith("mcp__hung__") for name in tools)


async def test_the_status_panel_and_the_mcp_panel_show_each_server(
    make_app, scripted_in_process, hermes_home
):
    """M1: `MCP 1/2 ready · 1 failed`; /mcp lists the servers with state, transport, tools
    and schema tokens; the detail shows the last error, `s` the stderr; Esc closes."""
    server = scripted_in_process({"replies": [reply("hi")]})
    servers = {"calc": stdio_entry("normal"), "gone": stdio_entry("exit_at_start")}
    app = with_servers(make_app(server), hermes_home, servers)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: "MCP 1/2 ready · 1 failed" in app.status_panel.text)
        await app.submit("/mcp")
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))
        screen = app.screen
        rows = [str(o.prompt) for o in screen.query_one(OptionList).options]
        # The normal server's tools, its screenshot (G4) included.
        assert rows[0].split()[:4] == ["calc", "ready", "stdio", "9"]
        assert "tokens" in rows[0] and rows[1].split()[:2] == ["gone", "failed"]
        detail = screen.query_one("#mcp-detail-text", Static)
        assert "mcp__calc__echo  [asks · says read-only]" in str(detail.content)
        await type_keys(pilot, "down")
        await wait_until(pilot, lambda: "last error: exited" in str(detail.content))
        await type_keys(pilot, "s")
        await wait_until(pilot, lambda: "missing configuration" in str(detail.content))
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, McpScreen))


async def test_restart_from_the_panel_brings_a_server_back(
    make_app, scripted_in_process, hermes_home
):
    """M1: `r` in the panel restarts the highlighted server, off the UI thread."""
    server = scripted_in_process({"replies": [reply("hi")]})
    app = with_servers(make_app(server), hermes_home, {"calc": stdio_entry("normal")})
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        calc = manager(app).get("calc")
        await wait_until(pilot, lambda: calc.state == State.READY, timeout=20)
        await app.submit("/mcp disable calc")
        await wait_until(pilot, lambda: calc.state == State.DISABLED)
        await app.submit("/mcp")
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))
        await type_keys(pilot, "r")
        await wait_until(pilot, lambda: calc.state == State.READY, timeout=20)


async def test_mcp_without_servers_says_how_to_add_them(make_app, scripted_in_process):
    """M1: /mcp with nothing configured is one sentence pointing at the config."""
    app = make_app(scripted_in_process({"replies": [reply("hi")]}))
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("/mcp")
        await wait_until(pilot, lambda: "No MCP servers" in notices(app))


async def test_a_prompt_is_a_slash_command_whose_text_is_sent(
    make_app, scripted_in_process, hermes_home
):
    """M1: `/mcp:<server>:<prompt> args` fills the prompt's arguments and sends its text."""
    server = scripted_in_process({"replies": [reply("reviewed")]})
    app = with_servers(make_app(server), hermes_home, {"calc": stdio_entry("normal")})
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: manager(app).prompts(), timeout=20)
        hints = app.command_table.complete("/mcp:calc:")
        assert [h.usage for h in hints] == ["/mcp:calc:review <topic> [tone]"]
        await app.submit("/mcp:calc:review")
        await wait_until(pilot, lambda: "needs topic" in notices(app))
        await app.submit('/mcp:calc:review "the parser"')
        await app.wait_for_turn(20)
        user = server.requests[-1].body["messages"][-1]
        assert user["content"] == "Please review the parser, in a kind tone."


async def test_the_dialog_names_the_server_and_remembers_for_the_project(
    make_app, scripted_in_process, hermes_home
):
    """M2: the approval dialog shows the server and its read-only claim, offers
    "always for this project" (p), and that answer is stored: the next call runs unasked."""
    call = {"tool_calls": [{"id": "e1", "name": "mcp__calc__echo", "arguments": {"text": "x"}}]}
    again = {"tool_calls": [{"id": "e2", "name": "mcp__calc__echo", "arguments": {"text": "y"}}]}
    server = scripted_in_process(
        {"replies": [reply(**call), reply("one"), reply(**again), reply("two")]}
    )
    app = with_servers(
        make_app(server, approval="ask"), hermes_home, {"calc": stdio_entry("normal")}
    )
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: manager(app).tools(), timeout=20)
        await app.submit("echo")
        dialog = await approval_dialog(pilot, armed=True)
        note = str(dialog.query_one("#approval-note", Static).content)
        assert "MCP server calc" in note and "read-only" in note
        assert dialog.query_one("#project", Button)
        await answer_approval(pilot, "p")
        await app.wait_for_turn(20)
        stored = yaml.safe_load((hermes_home / "projects.yaml").read_text())
        assert next(iter(stored.values()))["mcp_trust"] == {"calc": ["echo"]}
        await run_turn(pilot, "echo again")
        assert not isinstance(app.screen, type(dialog))
        results = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
        assert results[-1]["content"] == "echo: y"


def test_mcp_panel_snapshot(snap_compare, make_app, scripted_in_process, hermes_home):
    """M1: the /mcp panel, a failed server and one turned off (no machine paths shown)."""
    server = scripted_in_process({"replies": [reply("hi")]})
    servers = {
        "missing": {"command": "hermes-no-such-command"},
        "off": {"command": "unused", "enabled": False},
    }
    app = with_servers(make_app(server), hermes_home, servers)

    async def open_panel(pilot):
        await app.ready()
        await wait_until(pilot, lambda: manager(app).get("missing").state == State.FAILED)
        await app.submit("/mcp")
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))

    assert snap_compare(app, terminal_size=SIZE, run_before=open_panel)


async def test_attaching_the_servers_runs_off_the_ui_thread(
    make_app, scripted_in_process, hermes_home, monkeypatch
):
    """M1: reading .mcp.json and importing the SDK happen on a worker thread, never on the
    thread that draws the app."""
    import threading

    from agent.mcp import attach

    seen = []
    real = attach.attach_mcp

    def recording(agent, workspace):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(agent, workspace)

    monkeypatch.setattr(attach, "attach_mcp", recording)
    server = scripted_in_process({"replies": [reply("hi")]})
    app = with_servers(make_app(server), hermes_home, {"calc": stdio_entry("normal")})
    async with app.run_test(size=SIZE):
        await app.ready()
        assert seen == [False] and manager(app) is not None


async def test_the_panel_shows_a_tool_allowed_for_this_session(
    make_app, scripted_in_process, hermes_home
):
    """M2: after "always" (a) in the dialog, the /mcp panel shows that tool as allowed for
    this session; the other tools still ask."""
    call = {"tool_calls": [{"id": "e1", "name": "mcp__calc__echo", "arguments": {"text": "x"}}]}
    server = scripted_in_process({"replies": [reply(**call), reply("one")]})
    app = with_servers(
        make_app(server, approval="ask"), hermes_home, {"calc": stdio_entry("normal")}
    )
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: manager(app).tools(), timeout=20)
        await app.submit("echo")
        await approval_dialog(pilot, armed=True)
        await answer_approval(pilot, "a")
        await app.wait_for_turn(20)
        await app.submit("/mcp")
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))
        detail = app.screen.query_one("#mcp-detail-text", Static)
        text = str(detail.content)
        assert "mcp__calc__echo  [allowed (this session) · says read-only]" in text
        assert "mcp__calc__add  [asks]" in text
