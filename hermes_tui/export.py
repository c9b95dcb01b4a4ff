"""/export: the visible transcript of a session as Markdown or JSON (never reasoning, R1).

What the transcript shows is what is exported: messages, tool calls with their output and
diffs, and the ◈ rows. Reasoning is never stored, so it cannot be exported either.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.kinds import IMAGES_KEY
from hermes_tui.widgets.messages import chip_label, image_attachment

FORMATS = ("md", "json")


class ExportError(Exception):
    """An export that cannot be written; the message is one sentence."""


EXPORTS_DIR = "exports"
"""The folder under the app's home where `/export` without a path writes."""


def parse_arguments(
    argument: str, session_id: str, workspace: Path, home: Path
) -> tuple[str, Path]:
    """`[md|json] [path]` -> (format, path); a relative path is in the workspace, and
    without one the file goes to the app's home (`exports/`), never loose in the repository.

    Raises ExportError for a bare word that names no format we write (`pdf`, `html`).
    """
    words = argument.split(maxsplit=1)
    named = bool(words) and words[0].lower() in FORMATS
    if len(words) == 1 and not named and _looks_like_format(words[0]):
        # "/export pdf" means a format we lack, not a file called "pdf" written as Markdown.
        raise ExportError(
            f"Cannot export as {words[0]!r}: use md or json, or give a path such as notes.md."
        )
    fmt = words.pop(0).lower() if named else "md"
    raw = words[0].strip() if words else ""
    if not raw:
        return fmt, home / EXPORTS_DIR / f"hermes-session-{session_id}.{fmt}"
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = workspace / path
    suffix = path.suffix.lstrip(".").lower()
    if not named and suffix in FORMATS:
        fmt = suffix
    return fmt, path


def _looks_like_format(word: str) -> bool:
    """A bare word with no dot or slash names a format, not a file."""
    return word.isalnum() and len(word) <= 8


def _fence(text: str, info: str = "") -> str:
    """`text` in a Markdown code fence longer than any backtick run inside it."""
    best = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        best = max(best, run)
    ticks = "`" * max(3, best + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def to_markdown(
    session: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    *,
    summary: Callable[[str, Any], str],
    marker: Callable[[str, dict[str, Any] | None], str | None],
) -> str:
    """The session as Markdown: who said what, each tool call with its output and diff."""
    results = {r.get("tool_call_id"): r for r in rows if r.get("role") == "tool"}
    out = [f"# {session.get('title') or 'untitled'}", ""]
    out.append(f"Session `{session['id']}`, model `{session.get('model') or '?'}`.")
    out += _todo_markdown(session)
    for row in rows:
        kind = row.get("display_kind")
        if kind:
            line = marker(kind, row.get("display_metadata"))
            if line:
                out += ["", line]
            continue
        role = row.get("role")
        content = row.get("content") or ""
        if role == "user":
            out += ["", "## You", "", _with_image_chips(content, row.get("display_metadata"))]
        elif role == "assistant":
            out += ["", "## Assistant"]
            if content:
                out += ["", content]
            for call in row.get("tool_calls") or []:
                out += _tool_markdown(call, results.get(call.get("id")), summary)
    return "\n".join(out).rstrip() + "\n"


def _tool_markdown(
    call: Mapping[str, Any], result: Mapping[str, Any] | None, summary: Callable[[str, Any], str]
) -> list[str]:
    # The summary keeps a command's line breaks (the screen shows them as ␊); a code span
    # in Markdown must stay on one line, or a line of it could start a heading or a fence.
    shown = " ".join(summary(call.get("name", ""), call.get("arguments")).split())
    lines = ["", f"**Tool** `{shown}`"]
    if result is None:
        return [*lines, "", "_(no result)_"]
    meta = result.get("display_metadata") or {}
    lines += ["", _fence(result.get("content") or "")]
    diff = meta.get("diff") if isinstance(meta, dict) else None
    if isinstance(diff, dict) and isinstance(diff.get("text"), str):
        lines += ["", _fence(diff["text"], "diff")]
    images = meta.get(IMAGES_KEY) if isinstance(meta, dict) else None
    if isinstance(images, list) and images:
        chips = [_code_span(chip_label(image_attachment(ref))[0]) for ref in images]
        lines += ["", " ".join(chips)]
    subagent = meta.get("subagent") if isinstance(meta, dict) else None
    if isinstance(subagent, dict):
        lines += ["", _subagent_line(subagent)]
    plan = meta.get("plan") if isinstance(meta, dict) else None
    if isinstance(plan, dict) and isinstance(plan.get("text"), str):
        # The plan word for word (N1), fenced so its headings stay inside the export's own.
        lines += [
            "",
            f"**Plan** ({plan.get('answer') or 'proposed'})",
            "",
            _fence(plan["text"], "markdown"),
        ]
    return lines


def _with_image_chips(content: str, metadata: Any) -> str:
    """A user message's text with each attached image as its chip, in a code span, not the
    `<attached_image>` line the model reads (G4); its size comes from the row's chips."""
    from agent.attachments import ATTACHMENTS_KEY, replace_image_blocks

    listed = metadata.get(ATTACHMENTS_KEY) if isinstance(metadata, dict) else None
    sizes = {
        a.get("path"): a.get("bytes")
        for a in listed or ()
        if isinstance(a, dict) and a.get("kind") == "image"
    }

    def chip(image: dict[str, Any]) -> str:
        return _code_span(chip_label({**image, "bytes": sizes.get(image["path"])})[0])

    return replace_image_blocks(content, chip)


def _code_span(text: str) -> str:
    """`text` as one Markdown code span, its delimiter longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _subagent_line(subagent: dict[str, Any]) -> str:
    """What a `task` call's subagent did, and the session that holds its own transcript (G1)."""
    what = " ".join(str(subagent.get("description") or "").split())
    calls, tokens = subagent.get("tool_calls") or 0, subagent.get("tokens") or 0
    plural = "" if calls == 1 else "s"
    kind = subagent.get("type") or "?"
    line = f"**Subagent** {kind} ({what}): {calls} tool call{plural}, {tokens} tokens"
    session = subagent.get("session_id")
    return f"{line}; its transcript is session `{session}`." if session else f"{line}."


TODO_MARKS = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}
"""How each status shows in an exported todo list (a Markdown task list; `~` in progress)."""


def _todo_markdown(session: Mapping[str, Any]) -> list[str]:
    """The model's todo list as last written (N2), as a task list; nothing when it has none."""
    from agent.todos import TODOS_KEY, TodoList

    todos = TodoList.stored((session.get("metadata") or {}).get(TODOS_KEY))
    if not todos.items:
        return []
    lines = ["", f"**Todo** {todos.progress}", ""]
    for item in todos.items:
        text = " ".join(item.text.split())  # one line an item: a newline could start a heading
        lines.append(f"- {TODO_MARKS.get(item.status, '[ ]')} {text}")
    return lines


def to_json(session: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The session and its rows as JSON (the exact stored text, display metadata with it)."""
    keep = (
        "id", "title", "model", "provider", "created_at", "parent_id", "branch_kind",
        "parent_session_id",
    )  # fmt: skip
    messages = [
        {key: row.get(key) for key in (
            "seq", "role", "content", "tool_calls", "tool_call_id", "name", "display_kind",
            "display_metadata",
        )}
        for row in rows
        if row.get("display_kind") != "hidden"
    ]  # fmt: skip
    payload = {
        "session": {key: session.get(key) for key in keep},
        "exported_at": time.time(),
        "messages": messages,
    }
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"


def write_export(path: Path, text: str) -> None:
    """Write the export (a new file is 0600: a transcript may quote private files)."""
    from storage.errors import StorageError
    from storage.files import atomic_write

    if path.exists() and path.is_dir():
        raise ExportError(f"{path} is a folder; give a file name to export to.")
    if not path.parent.is_dir():
        raise ExportError(f"Cannot export to {path}: the folder {path.parent} does not exist.")
    try:
        atomic_write(path, text)
    except (OSError, StorageError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ExportError(f"Cannot export to {path}: {reason}.") from None
