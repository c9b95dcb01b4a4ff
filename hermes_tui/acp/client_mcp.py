"""The MCP servers a client passes with session/new as our server settings (agent/mcp/).

They are the user's own choice, made in their editor, so they count as the user's config
(`origin="config"`), not as a project's .mcp.json that needs consent; their tools still ask
before they run, as every MCP tool does.
"""

from __future__ import annotations

from typing import Any

from agent.mcp.settings import McpServerConfig


def client_servers(servers: list[Any]) -> dict[str, McpServerConfig]:
    """Stdio and HTTP servers by name; others (SSE, ACP-tunnelled) are not supported."""
    found: dict[str, McpServerConfig] = {}
    for server in servers:
        name = str(getattr(server, "name", "") or "")
        if not name:
            continue
        headers = tuple((h.name, h.value) for h in getattr(server, "headers", None) or ())
        if getattr(server, "type", None) == "http":
            found[name] = McpServerConfig(
                name, transport="http", url=str(server.url), headers=headers, source="the editor"
            )
        elif getattr(server, "command", None):
            found[name] = McpServerConfig(
                name,
                command=str(server.command),
                args=tuple(str(a) for a in server.args or ()),
                env=tuple((e.name, e.value) for e in server.env or ()),
                source="the editor",
            )
    return found
