"""MCP: tools and prompts from Model Context Protocol servers (SPEC M1, M2).

settings.py reads `mcp_servers:`, `mcp:` and a project's `.mcp.json`; loop.py is the
background asyncio loop every MCP session lives on; stdio.py and connection.py connect one
server; manager.py owns them all; tools.py puts their tools in the registry (tool search
included); results.py turns a tool result into text; projects.py keeps the user's
per-project answers (consent to a project's servers, tools trusted for a project).
"""
