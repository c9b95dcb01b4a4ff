"""`/agents`: the subagent types a `task` call may use (G1), with their tools and model."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command
from hermes_tui.safe_text import safe_name

NO_FILES = (
    "Add a type of your own as .hermes-tui/agents/NAME.md (this project) or "
    "{home}/agents/NAME.md (yours): front matter `description`, `tools`, `model`, then its "
    "system prompt."
)

SESSION_MODEL = "the session's"
"""What a type that names no model runs on."""


@command("agents", "", "List the subagent types: their tools and model, and files skipped")
async def agents(ctx: CommandContext, _argument: str) -> None:
    """List every agent type (project, user, built-in) and each type file that was skipped."""
    lines, skipped = agent_type_lines(ctx)
    await ctx.notice("\n".join(lines), "warning" if skipped else "info")


def agent_type_lines(ctx: CommandContext) -> tuple[list[str], bool]:
    """The /agents listing, read from the folders now, and whether a file was skipped."""
    from agent.agent_types import load_agent_types
    from agent.custom_commands import shown_path
    from agent.homes import tilde

    workspace = ctx.agent.workspace if ctx.agent is not None else Path.cwd()
    loaded = load_agent_types(workspace, ctx.config.home)
    here = set(ctx.agent.registry.names()) if ctx.agent is not None else None
    lines = ["Subagent types (the `task` tool's agent_type; a project file wins a name):"]
    seen: set[str] = set()
    for kind in loaded.types:
        where = kind.origin if kind.path is None else f"{kind.origin}, {shown_path(kind.path)}"
        hidden = "  (hidden by the one above)" if kind.name in seen else ""
        seen.add(kind.name)
        lines.append(f"  {safe_name(kind.name)}  ({safe_name(where)}){hidden}")
        if kind.description:
            lines.append(f"    {safe_name(kind.description)}")
        tools = ", ".join(
            safe_name(tool) + ("" if here is None or tool in here else " (not here)")
            for tool in kind.tools
        )
        lines.append(f"    tools: {tools}")
        model = safe_name(kind.model) if kind.model else SESSION_MODEL
        lines.append(f"    model: {model}")
    if len(loaded.types) == 1 and not loaded.skipped:
        lines.append(NO_FILES.format(home=tilde(ctx.config.home)))
    lines += [safe_name(line) for line in loaded.skipped]
    return lines, bool(loaded.skipped)
