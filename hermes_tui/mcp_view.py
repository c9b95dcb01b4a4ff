"""The MCP servers as text for the /mcp panel: one row each, a detail view, the stderr tail.

Everything a server sends (its name for itself, tool names and descriptions, error text,
stderr) is outside text: it goes through the sanitiser here, before any widget sees it (H1);
a name (a server's, a tool's, a prompt's) is one row with its newlines shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_tui.safe_text import safe_line, safe_name, safe_output

STDERR_LINES = 200
DESCRIPTION_WIDTH = 70


def _short(text: str, width: int) -> str:
    flat = " ".join(safe_line(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def server_row(server: Any) -> str:
    """`git  ready  stdio  12 tools  ~3.1k tokens`."""
    tools = len(server.tools)
    tokens = server.schema_tokens
    size = f"~{tokens / 1000:.1f}k" if tokens >= 1000 else f"~{tokens}"
    return (
        f"{safe_name(server.name):<16} {server.state!s:<14} {server.transport:<5} "
        f"{tools:>3} tools  {size} tokens"
    )


Allowed = Callable[[str, str], bool]
"""(server, tool) -> whether an answer covers that tool: the project's, or this session's."""


def trust_of(
    server: Any, tool: Any, project_trusted: Allowed | None, session_allowed: Allowed | None = None
) -> str:
    """How a call of `tool` is approved: trusted by config or project, "always" answered in
    this session, else it asks."""
    if server.config.trusts(tool.name):
        return "trusted (config)"
    if project_trusted is not None and project_trusted(server.name, tool.name):
        return "trusted (project)"
    if session_allowed is not None and session_allowed(server.name, tool.name):
        return "allowed (this session)"
    return "asks"


def server_detail(
    server: Any, project_trusted: Allowed | None = None, session_allowed: Allowed | None = None
) -> str:
    """The panel's right side: what the server is, its state, error, notes, tools, prompts."""
    config = server.config
    where = "your config.yaml" if config.origin == "config" else "this project's .mcp.json"
    lines = [
        f"{safe_name(server.name)}: {server.state}",
        f"{config.transport}: {_short(config.describe(), 120)}",
        f"from {where}",
    ]
    if config.variables():
        lines.append("reads: " + ", ".join(f"${safe_name(name)}" for name in config.variables()))
    if server.server_info:
        lines.append(f"server: {_short(server.server_info, 80)}")
    if server.error:
        lines.append(f"last error: {_short(server.error, 400)}")
    lines += [f"note: {_short(note, 200)}" for note in server.notes]
    if server.tools:
        lines += ["", f"tools ({len(server.tools)}, ~{server.schema_tokens} schema tokens):"]
        for tool in server.tools:
            claim = " · says read-only" if tool.read_only else ""
            lines.append(
                f"  {safe_name(tool.wire)}  "
                f"[{trust_of(server, tool, project_trusted, session_allowed)}{claim}]"
            )
            if tool.description:
                lines.append(f"      {_short(tool.description, DESCRIPTION_WIDTH)}")
    if server.prompts:
        lines += ["", "prompts:"]
        lines += [
            f"  /mcp:{safe_name(server.name)}:{safe_name(p.name)}  "
            f"{_short(p.description, DESCRIPTION_WIDTH)}"
            for p in server.prompts
        ]
    return "\n".join(lines)


def stderr_text(server: Any) -> str:
    """The last lines the server wrote to stderr, made safe (colours dropped)."""
    text = safe_output(server.tail.text())
    lines = text.splitlines()[-STDERR_LINES:]
    if not lines:
        return f"{safe_name(server.name)} wrote nothing to stderr."
    return "\n".join([f"stderr of {safe_name(server.name)} (last lines):", *lines])
