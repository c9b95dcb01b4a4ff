"""File tools: read_file, write_file, edit_file, list_dir."""

from __future__ import annotations

import io
import os
from typing import Any

from agent.tools import paths
from agent.tools.diffs import DIFF_KEY, file_diff, unified_diff
from agent.tools.protected import APP_HOME, app_home_reason, protected_reason
from agent.tools.registry import (
    ApprovalRequest,
    Pending,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    describe_os_error,
    one_row,
)

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 1000
BINARY_SNIFF = 8192
SKIP_IN_LISTING = frozenset({".git"})


PROTECTED_NOTE = "protected path (runs code on its own)"
APP_HOME_NOTE = "protected path (the app's own home)"


def _decode_text(data: bytes, rel: str) -> str:
    """The file's text (UTF-8, line endings kept), or ToolError for binary/undecodable files."""
    if b"\0" in data[:BINARY_SNIFF]:
        raise ToolError(f"{rel} looks like a binary file; this tool only works on text files.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{rel} is not valid UTF-8 text; this tool only works on text.") from None


def _read_text(target: paths.Target) -> str:
    """The text of `target`, read through a checked descriptor."""
    try:
        data = paths.read_bytes(target)
    except OSError as exc:
        raise ToolError(f"Could not read {target.rel}: {describe_os_error(exc)}.") from None
    return _decode_text(data, target.rel)


def _text_before(target: paths.Target) -> str:
    """What a write replaces, for its diff: the old text, or "" for a non-text file."""
    try:
        return _read_text(target)
    except ToolError:
        return ""


def _require_file(target: paths.Target) -> None:
    stamp = target.final
    if stamp is None:
        raise ToolError(f"File not found: {target.rel}.")
    if stamp.is_dir:
        raise ToolError(
            f"{target.rel} is a directory, not a file; use list_dir to see its contents."
        )
    if not stamp.is_file:
        raise ToolError(f"{target.rel} is not a regular file.")


def _write_target(ctx: ToolContext, raw: str) -> paths.Target:
    """The target of a write or edit: inside the workspace and reached without links."""
    target = paths.resolve(ctx.workspace, raw)
    target.refuse_links(raw)
    return target


def _protection(ctx: ToolContext, target: paths.Target) -> tuple[str, str]:
    """(why the target is protected, the sentence for the model) or ("", "")."""
    absolute = target.workspace.joinpath(*target.parts)
    why = app_home_reason(absolute, ctx.app_homes) or protected_reason(
        target.workspace, target.parts
    )
    if not why:
        return "", ""
    return why, f"{target.rel} is a protected path ({why})"


def _protected_request(tool: str, summary: str, why: str, detail: str) -> ApprovalRequest:
    """An approval request that says, when the target is protected, why it asks."""
    if not why:
        return ApprovalRequest(tool, one_row(summary), detail)
    note = APP_HOME_NOTE if why == APP_HOME else PROTECTED_NOTE
    return ApprovalRequest(
        tool,
        # The reason goes first so that a long path cannot push it out of the one line.
        one_row(f"{note}: {summary}"),
        f"Protected path: {why}.\n\n{detail}",
        protected=True,
    )


# ---------------------------------------------------------------- read_file


def read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Numbered lines of a text file (`cat -n` style), windowed by offset/limit."""
    target = paths.resolve(ctx.workspace, args["path"])
    rel = target.rel
    _require_file(target)
    offset = args.get("offset", 1)
    limit = args.get("limit", DEFAULT_READ_LINES)
    if offset < 1:
        raise ToolError("offset must be 1 or more (line numbers start at 1).")
    if limit < 1:
        raise ToolError("limit must be 1 or more.")
    try:
        fd = paths.open_file(target)
    except OSError as exc:
        raise ToolError(f"Could not read {rel}: {describe_os_error(exc)}.") from None
    try:
        with os.fdopen(fd, "rb") as raw:
            if b"\0" in raw.read(BINARY_SNIFF):
                size = os.fstat(raw.fileno()).st_size
                raise ToolError(
                    f"{rel} looks like a binary file ({size} bytes); read_file only reads text."
                )
            raw.seek(0)
            return _numbered_lines(raw, rel, offset, limit, max(ctx.output_cap - 200, 1000))
    except UnicodeError as exc:  # pragma: no cover - errors="replace" makes this rare
        raise ToolError(f"Could not decode {rel}: {exc}.") from None
    except OSError as exc:
        raise ToolError(f"Could not read {rel}: {describe_os_error(exc)}.") from None


def _numbered_lines(raw: Any, rel: str, offset: int, limit: int, budget: int) -> ToolResult:
    """The `cat -n` window of an open binary file, within `budget` characters."""
    out: list[str] = []
    used = 0
    total = 0
    last_shown = offset - 1
    stopped_for_size = False
    fh = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
    for number, line in enumerate(fh, start=1):
        total = number
        if number < offset or number >= offset + limit or stopped_for_size:
            continue
        text = line.rstrip("\r\n")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"… [line truncated, {len(text)} chars]"
        row = f"{number:6}\t{text}\n"
        if used + len(row) > budget and out:
            stopped_for_size = True
            continue
        out.append(row)
        used += len(row)
        last_shown = number
    fh.detach()
    if total == 0:
        return ToolResult(True, f"({rel} is empty)")
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {rel}, which has {total} lines.")
    body = "".join(out)
    if last_shown < total:
        body += (
            f"[showing lines {offset}-{last_shown} of {total}; "
            f"use offset={last_shown + 1} to read more]\n"
        )
    return ToolResult(True, body.rstrip("\n"))


# ---------------------------------------------------------------- write_file


def write_file(ctx: ToolContext, args: dict[str, Any]) -> Pending:
    """Validate a write and return it pending approval."""
    content: str = args["content"]
    target = _write_target(ctx, args["path"])
    rel = target.rel
    stamp = target.final
    if not target.parts or (stamp is not None and stamp.is_dir):
        raise ToolError(f"{rel} is a directory; give a file path to write.")
    exists = stamp is not None
    if stamp is not None and not stamp.is_file:
        raise ToolError(f"{rel} exists and is not a regular file.")
    why, protected = _protection(ctx, target)

    def request() -> ApprovalRequest:
        old = ""
        note = ""
        if exists:
            try:
                old = _read_text(target)
            except ToolError:
                note = f"(replaces the existing non-text file {rel})\n"
        verb = "overwrite" if exists else "create"
        detail = note + unified_diff(old, content, rel)
        return _protected_request("write_file", f"write_file {verb} {rel}", why, detail)

    def commit() -> ToolResult:
        data = content.encode("utf-8")
        before = _text_before(target) if exists else ""
        try:
            paths.write_bytes(target, data)
        except OSError as exc:
            raise ToolError(f"Could not write {rel}: {describe_os_error(exc)}.") from None
        verb = "Overwrote" if exists else "Created"
        diff = file_diff(before, content, rel)
        return ToolResult(
            True, f"{verb} {rel} ({len(data)} bytes written).", display={DIFF_KEY: diff.metadata()}
        )

    return Pending(request, commit, protected=protected, touches=rel)


# ---------------------------------------------------------------- edit_file


def edit_file(ctx: ToolContext, args: dict[str, Any]) -> Pending:
    """Validate an exact-string replacement and return it pending approval."""
    target = _write_target(ctx, args["path"])
    rel = target.rel
    old_string: str = args["old_string"]
    new_string: str = args["new_string"]
    replace_all: bool = args.get("replace_all", False)
    _require_file(target)
    if old_string == "":
        raise ToolError("old_string is empty; give the exact text to replace.")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    original = _read_text(target)
    count = original.count(old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {rel}; it must match the file exactly, "
            "including whitespace and indentation (read the file first)."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {rel}; include more surrounding text to make "
            "it unique, or set replace_all to true to replace every occurrence."
        )
    updated = original.replace(old_string, new_string)
    replaced = count if replace_all else 1
    why, protected = _protection(ctx, target)

    def request() -> ApprovalRequest:
        detail = unified_diff(original, updated, rel)
        return _protected_request("edit_file", f"edit_file {rel}", why, detail)

    def commit() -> ToolResult:
        if _read_text(target) != original:
            raise ToolError(f"{rel} changed while the edit waited; read it again and retry.")
        try:
            paths.write_bytes(target, updated.encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"Could not write {rel}: {describe_os_error(exc)}.") from None
        noun = "occurrence" if replaced == 1 else "occurrences"
        diff = file_diff(original, updated, rel)
        return ToolResult(
            True, f"Edited {rel}: replaced {replaced} {noun}.", display={DIFF_KEY: diff.metadata()}
        )

    return Pending(request, commit, protected=protected, touches=rel)


# ---------------------------------------------------------------- list_dir


def list_dir(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Sorted entries of a directory; directories end with "/"."""
    target = paths.resolve(ctx.workspace, args.get("path", "."), default=".")
    rel = target.rel
    if target.final is None:
        raise ToolError(f"Directory not found: {rel}.")
    if not target.final.is_dir:
        raise ToolError(f"{rel} is a file, not a directory; use read_file to read it.")
    try:
        fd = paths.open_dir(target)
        try:
            entries = _entries(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ToolError(f"Could not list {rel}: {describe_os_error(exc)}.") from None
    if not entries:
        return ToolResult(True, f"({rel} is empty)")
    entries.sort(key=lambda name: (name.lower(), name))
    shown = entries[:MAX_LIST_ENTRIES]
    text = "\n".join(shown)
    if len(entries) > len(shown):
        text += f"\n[... {len(entries) - len(shown)} more entries not shown ...]"
    return ToolResult(True, text)


def _entries(fd: int) -> list[str]:
    """The names in the open directory `fd`, directories marked with "/"."""
    entries = []
    with os.scandir(fd) as it:
        for entry in it:
            if entry.name in SKIP_IN_LISTING:
                continue
            try:
                # A link is listed by name only: its target may be outside the workspace.
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            entries.append(entry.name + ("/" if is_dir else ""))
    return entries


TOOLS = [
    Tool(
        name="read_file",
        description=(
            "Read a text file in the workspace. Returns its lines numbered like `cat -n` "
            "(line number, tab, text). Reads up to 2000 lines by default; use offset (1-based "
            "first line) and limit (number of lines) to page through longer files."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace or absolute inside it.",
                },
                "offset": {
                    "type": "integer",
                    "description": "1-based line number to start reading from (default 1).",
                },
                "limit": {
                    "type": "integer",
                    "description": "Maximum number of lines to return (default 2000).",
                },
            },
            "required": ["path"],
        },
        handler=read_file,
        kind="read",
        summary_keys=("path",),
    ),
    Tool(
        name="write_file",
        description=(
            "Create a file, or replace an existing file's whole content, in the workspace. "
            "Missing parent directories are created. Prefer edit_file for changing part of an "
            "existing file."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace or absolute inside it.",
                },
                "content": {"type": "string", "description": "The complete new file content."},
            },
            "required": ["path", "content"],
        },
        handler=write_file,
        kind="edit",
        summary_keys=("path",),
    ),
    Tool(
        name="edit_file",
        description=(
            "Replace an exact piece of text in an existing file. old_string must match the file "
            "exactly (whitespace and indentation included) and occur exactly once, unless "
            "replace_all is true. Read the file before editing it."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace or absolute inside it.",
                },
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence instead of exactly one (default "
                    "false).",
                },
            },
            "required": ["path", "old_string", "new_string"],
        },
        handler=edit_file,
        kind="edit",
        summary_keys=("path",),
    ),
    Tool(
        name="list_dir",
        description=(
            "List the entries of a directory in the workspace, sorted by name; directories end "
            "with '/'."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory path, relative to the workspace (default '.').",
                },
            },
            "required": [],
        },
        handler=list_dir,
        kind="read",
        summary_keys=("path",),
    ),
]
