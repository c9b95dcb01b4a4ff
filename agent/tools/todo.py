"""The `todo_write` tool: the model writes its whole todo list; the agent keeps it (N2)."""

from __future__ import annotations

from typing import Any

from agent.todos import MAX_ITEMS, MAX_TEXT, STATUSES, TodoError, TodoList
from agent.tools.registry import Tool, ToolContext, ToolError, ToolResult


def write_todos(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Check the sent list and hand it to the agent; the model reads it back."""
    try:
        todos = TodoList.parse(args.get("todos"))
    except TodoError as exc:
        raise ToolError(f"todo_write refused the list: {exc}") from None
    if ctx.keep_todos is not None:
        ctx.keep_todos(todos)
    return ToolResult(True, todos.report(), display={"todos": todos.to_json()})


def summarise(args: dict[str, Any]) -> str:
    """`1/3 done ▶ the item in progress`: the call's row in the transcript."""
    todos = TodoList.stored(args.get("todos"))
    current = todos.current
    progress = f"{todos.progress} done"
    return progress if current is None else f"{progress} ▶ {current.text}"


TOOLS = [
    Tool(
        name="todo_write",
        description=(
            "Write your todo list for the current task: send the whole list each time "
            "(it replaces the last one). Use it for work of several steps; mark one item "
            "in_progress while you work on it and done as soon as it is finished. The user "
            f"sees the list. At most {MAX_ITEMS} items of up to {MAX_TEXT} characters; "
            "at most one in_progress."
        ),
        parameters={
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole list, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {"type": "string", "description": "One step, one line."},
                            "status": {"type": "string", "enum": list(STATUSES)},
                        },
                        "required": ["text", "status"],
                    },
                }
            },
            "required": ["todos"],
        },
        handler=write_todos,
        summarise=summarise,
        # It changes nothing in the workspace: no approval, allowed in plan mode too.
        kind="read",
    )
]
