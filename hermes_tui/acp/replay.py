"""A stored session as the `session/update` notifications `session/load` replays (E1).

What the transcript of a resumed session shows, in order: the user's messages, the answers,
each tool call with its stored outcome and diff, the todo list. Reasoning was never stored
(R1), so none is replayed; display rows no model saw (D1) stay out of the editor's chat.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp import helpers

from agent.attachments import SHOWN_KEY
from hermes_tui.acp.updates import plan_update, tool_finished, tool_started


def replayed(
    rows: Sequence[Mapping[str, Any]],
    workspace: Path,
    summary: Any,
    todos: Sequence[Mapping[str, str]] = (),
) -> Iterator[Any]:
    """The updates that show `rows` (load_messages' rows, compacted ones left out) again.

    `summary(name, args)` is the tool registry's one-row summary, as the live call had it.
    """
    for row in rows:
        if row.get("compacted") or row.get("display_kind"):
            continue
        role, content = row.get("role"), str(row.get("content") or "")
        meta = row.get("display_metadata") or {}
        if role == "user":
            shown = meta.get(SHOWN_KEY) if isinstance(meta, Mapping) else None
            yield helpers.update_user_message_text(shown if isinstance(shown, str) else content)
        elif role == "assistant":
            if content:
                yield helpers.update_agent_message_text(content)
            for call in row.get("tool_calls") or ():
                name, args = _call_of(call)
                call_id = str(call.get("id", ""))
                yield tool_started(call_id, name, args, summary(name, args), workspace)
        elif role == "tool":
            call_id = str(row.get("tool_call_id") or "")
            display = meta if isinstance(meta, Mapping) else None
            ok = bool(display.get("ok", True)) if display is not None else True
            yield tool_finished(call_id, ok, content, display, workspace)
    if todos:
        yield plan_update(tuple(todos))


def _call_of(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A stored tool call's name and arguments (arguments that are not a JSON object: none)."""
    from agent.messages import ToolCall

    stored = ToolCall.from_dict(dict(call))
    try:
        args = stored.parsed_arguments()
    except ValueError:
        args = {}
    return stored.name, args
