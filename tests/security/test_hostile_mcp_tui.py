"""A hostile MCP server in the app: escape sequences in a tool's name, result, stderr and
the /mcp panel reach no terminal (H1, M1, M2). Pilot over the scripted model and a real
stdio server."""

from __future__ import annotations

import yaml
from mcp_servers import stdio_entry
from security.test_hostile_tui import controls, drawn, unfold_all, widget_texts
from textual.widgets import Static
from ui.tui_helpers import answer_approval, approval_dialog, reply
from waits import wait_until

from agent.config import load_config
from agent.mcp.names import wire_name
from hermes_tui.screens.mcp import McpScreen

ESCAPED_TOOL = "\x1b[31mescaped\x1b[0m_name"
SIZE = (120, 36)


async def test_a_hostile_servers_names_and_results_draw_no_control_character(
    make_app, scripted, hermes_home
):
    """H1: the dialog names the tool with its escapes shown, the result is drawn with its
    sequences dropped (the bidi override named), and the /mcp panel of the server holds no
    control character."""
    call = {"tool_calls": [{"id": "x1", "name": wire_name("h", ESCAPED_TOOL), "arguments": {}}]}
    server = scripted({"replies": [reply(**call), reply("seen")]})
    app = make_app(server, approval="ask")
    path = hermes_home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"] = {"h": stdio_entry("hostile")}
    path.write_text(yaml.safe_dump(data))
    app.config = load_config()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: app.runtime.mcp.tools(), timeout=20)
        await app.submit("go")
        dialog = await approval_dialog(pilot, armed=True)
        note = str(dialog.query_one("#approval-note", Static).content)
        assert "␛[31mescaped␛[0m_name" in note
        assert controls(widget_texts(app)) == [] and controls(drawn(app)) == []
        await answer_approval(pilot, "y")
        await app.wait_for_turn(20)
        results = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
        assert "pwned" in results[-1]["content"]  # the model reads what the server said
        await unfold_all(app, pilot)
        texts = widget_texts(app)
        assert "result \\u202eevil" in texts and "pwned" not in texts  # sequences dropped
        assert controls(texts) == [] and controls(drawn(app)) == []
        await app.submit("/mcp")
        await wait_until(pilot, lambda: isinstance(app.screen, McpScreen))
        await pilot.pause()
        assert "pwned" in widget_texts(app)
        assert controls(widget_texts(app)) == [] and controls(drawn(app)) == []
