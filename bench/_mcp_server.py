"""The benchmark's MCP server (stdio): `add` alone, or N tools with realistic schemas.

`python -m bench._mcp_server [N] [PREFIX]`; the same script serves both sides of a ratio.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer


def build(count: int, prefix: str) -> MCPServer:
    """`add` (count 0: the call benchmark), else `count` tools named `<prefix>_<i>`."""
    app = MCPServer("bench", log_level="ERROR")
    if count == 0:

        @app.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

    for index in range(count):
        name = f"{prefix}_{index:02d}"
        app.add_tool(lambda: "ok", name=name, description=f"Does {name}. " + "Details. " * 20)
        app._tool_manager.get_tool(name).parameters = {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file or folder to act on. " * 4},
                "pattern": {"type": "string", "description": "A glob pattern to match. " * 4},
                "limit": {"type": "integer", "description": "How many results at most. " * 3},
                "recursive": {"type": "boolean", "description": "Descend into folders. " * 3},
            },
            "required": ["path"],
        }
    return app


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    build(count, sys.argv[2] if len(sys.argv) > 2 else "tool").run()
