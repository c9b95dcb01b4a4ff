"""Giving an Agent the MCP servers of its config and workspace (nothing when there are none)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.mcp.settings import PROJECT_FILE

if TYPE_CHECKING:
    from agent.loop import Agent
    from agent.mcp.manager import McpManager


def attach_mcp(agent: Agent, workspace: Path) -> McpManager | None:
    """Add the MCP tools to `agent`'s registry and start the servers in the background.

    Returns the manager (the caller closes it), or None when no server is configured: then
    no loop, thread or import of the SDK costs anything.
    """
    if not agent.config.mcp_servers and not (Path(workspace) / PROJECT_FILE).is_file():
        return None
    from agent.mcp.manager import McpManager
    from agent.mcp.tools import McpToolSource

    reserved = set(agent.registry.names())
    manager = McpManager(agent.config, workspace, lambda e: agent.sink(e), reserved=reserved)
    if not manager.servers and not manager.problems:
        return None
    agent.registry.add_source(McpToolSource(manager, window=lambda: agent.context_window))
    manager.start()
    return manager
