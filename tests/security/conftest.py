"""Hostile-input tests drive the real app: they share the UI suite's fixtures."""

from integration.conftest import harness, mcp  # noqa: F401 (MCP servers in whole turns)
from ui.conftest import make_app, scripted, workspace  # noqa: F401 (fixtures for pytest)
