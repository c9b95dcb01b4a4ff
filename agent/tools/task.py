"""The `task` tool's face to the model: its schema, and a description naming the agent types
(G1). What a call does is agent/subagents.py's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.agent_types import SUBAGENT_TOOL, LoadedTypes
from agent.tools.registry import Tool, ToolContext, ToolResult, one_line

DESCRIPTION_WIDTH = 60
"""A task's description is one short line: the title of its block and child session."""


def describe(types: LoadedTypes) -> str:
    """The tool's description: when to hand a job off, and each agent type there is."""
    lines = [
        "Hand a self-contained job to a subagent: it starts with none of this conversation, "
        "works with its own tools, and its final answer comes back as this call's result. "
        "Use it to search or read widely without filling your own context; write `prompt` "
        "as a complete brief (what to find, where to look, what to report). Several calls "
        "in one reply run at once when their types only read.",
        "Agent types (`agent_type`):",
    ]
    for name in types.names:
        kind = types.find(name)
        if kind is not None:
            tools = ", ".join(kind.tools)
            lines.append(f"- {name}: {kind.description or 'no description'} (tools: {tools})")
    return "\n".join(lines)


def summarise(args: dict[str, Any]) -> str:
    """`explore: find the config loader`: the call's row in the transcript."""
    kind = args.get("agent_type") or "explore"
    what = args.get("description") or args.get("prompt") or ""
    return f"{kind}: {one_line(str(what), DESCRIPTION_WIDTH)}" if what else str(kind)


def task_tool(
    types: LoadedTypes,
    run: Callable[[ToolContext, dict[str, Any]], ToolResult],
) -> Tool:
    """The `task` tool over the agent types there are now."""

    def side_by_side(args: dict[str, Any]) -> bool:
        kind = types.find(str(args.get("agent_type") or "explore"))
        return kind is not None and kind.read_only

    return Tool(
        name=SUBAGENT_TOOL,
        description=describe(types),
        parameters={
            "type": "object",
            "properties": {
                "prompt": {
                    "type": "string",
                    "description": "The whole job, self-contained: the subagent sees nothing else.",
                },
                "agent_type": {
                    "type": "string",
                    "enum": types.names,
                    "description": "Which agent type does it (default: explore).",
                },
                "description": {
                    "type": "string",
                    "description": "A few words the user sees for this job.",
                },
            },
            "required": ["prompt"],
        },
        handler=run,
        summarise=summarise,
        # Starting one changes nothing: its own tools ask, each in its turn, as the
        # parent's would (in plan mode it is read-only like its parent).
        kind="read",
        side_by_side=side_by_side,
    )
