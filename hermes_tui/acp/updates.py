"""Agent events as ACP `session/update` payloads: the one mapping, pure (E1).

Reasoning becomes `agent_thought_chunk`, shown by the editor and never sent back (R1): the
agent keeps no reasoning for replay, so nothing here has to hold it either.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp import helpers
from acp.schema import (
    Cost,
    FileEditToolCallContent,
    PlanEntryStatus,
    ToolCallLocation,
    ToolKind,
    UsageUpdate,
)

from agent import events as ev
from agent.tools.diffs import DIFF_KEY, FileDiff

TOOL_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "run_shell": "execute",
    "todo_write": "think",
    "propose_plan": "think",
    "web_fetch": "fetch",
}
"""The ACP tool kind an editor draws each built-in tool with; any other tool is "other"."""

PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
}
"""Our todo statuses (agent/todos.py) by their ACP plan entry names."""

REPLACED = "\n[retrying: the partial answer above is replaced]\n"
"""ACP cannot take streamed text back: a retry says so in the answer (W11)."""


def updates_for(event: ev.AgentEvent, workspace: Path) -> list[Any]:
    """The session updates that show `event` in an editor; [] for what ACP has no place for."""
    if isinstance(event, ev.TextDelta):
        return [helpers.update_agent_message_text(event.text)] if event.text else []
    if isinstance(event, ev.ReasoningDelta):
        return [helpers.update_agent_thought_text(event.text)] if event.text else []
    if isinstance(event, ev.StreamReset):
        return [helpers.update_agent_message_text(REPLACED)]
    if isinstance(event, ev.ToolStarted):
        return [tool_started(event.call_id, event.name, event.arguments, event.summary, workspace)]
    if isinstance(event, ev.ToolApprovalAnswered) and event.approved:
        return [helpers.update_tool_call(event.call_id, status="in_progress")]
    if isinstance(event, ev.ToolFinished):
        return [tool_finished(event.call_id, event.ok, event.output, event.display, workspace)]
    if isinstance(event, ev.TodosChanged):
        return [plan_update(event.items)]
    if isinstance(event, ev.UsageUpdated) and event.context_window:
        return [usage_update(event)]
    if isinstance(event, ev.SavingFailed):
        return [helpers.update_agent_message_text(f"\n{event.message}\n")]
    return []


def tool_kind(name: str) -> ToolKind:
    """The ACP kind of the tool called `name`."""
    return TOOL_KINDS.get(name, "other")


def tool_started(
    call_id: str, name: str, arguments: Mapping[str, Any], summary: str, workspace: Path
) -> Any:
    """A `tool_call`: pending until it runs (or is approved), with the file it touches."""
    path = arguments.get("path")
    locations = (
        [ToolCallLocation(path=str(workspace / path))] if isinstance(path, str) and path else None
    )
    return helpers.start_tool_call(
        call_id,
        summary or name,
        kind=tool_kind(name),
        status="pending",
        locations=locations,
        raw_input=dict(arguments),
    )


def tool_finished(
    call_id: str, ok: bool, output: str, display: Mapping[str, Any] | None, workspace: Path
) -> Any:
    """A `tool_call_update`: completed or failed, its diff as ACP diff content, else its output."""
    content: list[Any] = []
    diff = FileDiff.from_metadata((display or {}).get(DIFF_KEY))
    if ok and diff is not None:
        content.append(diff_content(diff, workspace))
    elif output:
        content.append(helpers.tool_content(helpers.text_block(output)))
    return helpers.update_tool_call(
        call_id, status="completed" if ok else "failed", content=content
    )


def diff_content(diff: FileDiff, workspace: Path) -> FileEditToolCallContent:
    """A unified diff as ACP's old/new text: each side is the hunks' lines on that side.

    The store keeps the diff, not the whole files (tools/diffs.py caps it), so the editor
    shows the changed regions with their context, which is what the diff holds.
    """
    old, new = hunk_sides(diff.text)
    return helpers.tool_diff_content(str(workspace / diff.path), new, old or None)


def hunk_sides(text: str) -> tuple[str, str]:
    """The old and the new side of a unified diff's hunks (headers dropped)."""
    old: list[str] = []
    new: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(("---", "+++", "@@", "\\")):
            continue
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    return "".join(old), "".join(new)


def plan_update(items: tuple[Mapping[str, str], ...]) -> Any:
    """The todo list (N2) as an ACP `plan`: every entry, each time (ACP replaces the plan)."""
    entries = [
        helpers.plan_entry(
            str(item.get("text", "")),
            status=PLAN_STATUS.get(str(item.get("status")), "pending"),
        )
        for item in items
    ]
    return helpers.update_plan(entries)


def usage_update(event: ev.UsageUpdated) -> UsageUpdate:
    """The context meter (what the last call sent of the window) and the session's cost."""
    cost = (
        Cost(amount=event.total_cost_usd, currency="USD")
        if event.total_cost_usd is not None
        else None
    )
    return UsageUpdate(
        session_update="usage_update",
        used=max(0, event.context_tokens),
        size=max(0, event.context_window or 0),
        cost=cost,
    )
