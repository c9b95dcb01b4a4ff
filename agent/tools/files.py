"""File tools: read_file, write_file, edit_file, list_dir."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from agent.tools.paths import display, resolve_in_workspace
from agent.tools.registry import (
    DETAIL_CAP,
    ApprovalRequest,
    Pending,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    describe_os_error,
    one_line,
)

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 1000
BINARY_SNIFF = 8192
SKIP_IN_LISTING = frozenset({".git"})


def looks_binary(path: Path) -> bool:
    """True if the first bytes of the file contain a NUL byte."""
    with path.open("rb") as fh:
        return b"\0" in fh.read(BINARY_SNIFF)


def unified_diff(old: str, new: str, name: str, cap: int = DETAIL_CAP) -> str:
    """A unified diff of `old` -> `new` for `name`, capped to about `cap` characters."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    out: list[str] = []
    size = 0
    total_lines = 0
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        total_lines += 1
        if size <= cap:
            out.append(line)
            size += len(line)
    text = "".join(out)
    if size > cap:
        text = text[:cap].rsplit("\n", 1)[0] + "\n"
        shown = text.count("\n")
        text += f"[... diff truncated: about {max(total_lines - shown, 1)} more lines ...]\n"
    return text or "(no changes)\n"


def _read_text(path: Path, rel: str) -> str:
    """The file's text (UTF-8, line endings kept), or ToolError for binary/undecodable files."""
    data = path.read_bytes()
    if b"\0" in data[:BINARY_SNIFF]:
        raise ToolError(f"{rel} looks like a binary file; this tool only works on text files.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{rel} is not valid UTF-8 text; this tool only works on text.") from None


def _require_file(path: Path, rel: str) -> None:
    if not path.exists():
        raise ToolError(f"File not found: {rel}.")
    if path.is_dir():
        raise ToolError(f"{rel} is a directory, not a file; use list_dir to see its contents.")
    if not path.is_file():
        raise ToolError(f"{rel} is not a regular file.")


# ---------------------------------------------------------------- read_file


def read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Numbered lines of a text file (`cat -n` style), windowed by offset/limit."""
    path = resolve_in_workspace(ctx.workspace, args["path"])
    rel = display(ctx.workspace, path)
    _require_file(path, rel)
    offset = args.get("offset", 1)
    limit = args.get("limit", DEFAULT_READ_LINES)
    if offset < 1:
        raise ToolError("offset must be 1 or more (line numbers start at 1).")
    if limit < 1:
        raise ToolError("limit must be 1 or more.")
    try:
        if looks_binary(path):
            size = path.stat().st_size
            raise ToolError(
                f"{rel} looks like a binary file ({size} bytes); read_file only reads text."
            )
        budget = max(ctx.output_cap - 200, 1000)
        out: list[str] = []
        used = 0
        total = 0
        last_shown = offset - 1
        stopped_for_size = False
        with path.open("r", encoding="utf-8", errors="replace", newline="") as fh:
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
    except UnicodeError as exc:  # pragma: no cover - errors="replace" makes this rare
        raise ToolError(f"Could not decode {rel}: {exc}.") from None
    except OSError as exc:
        raise ToolError(f"Could not read {rel}: {describe_os_error(exc)}.") from None
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
    raw = args["path"]
    content: str = args["content"]
    path = resolve_in_workspace(ctx.workspace, raw)
    rel = display(ctx.workspace, path)
    if path == ctx.workspace or path.is_dir():
        raise ToolError(f"{rel} is a directory; give a file path to write.")
    exists = path.exists()
    if exists and not path.is_file():
        raise ToolError(f"{rel} exists and is not a regular file.")

    def request() -> ApprovalRequest:
        old = ""
        note = ""
        if exists:
            try:
                old = _read_text(path, rel)
            except ToolError:
                note = f"(replaces the existing non-text file {rel})\n"
            except OSError:
                note = f"(replaces {rel}, which could not be read)\n"
        verb = "overwrite" if exists else "create"
        detail = note + unified_diff(old, content, rel)
        return ApprovalRequest("write_file", one_line(f"write_file {verb} {rel}"), detail)

    def commit() -> ToolResult:
        data = content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as exc:
            raise ToolError(f"Could not write {rel}: {describe_os_error(exc)}.") from None
        verb = "Overwrote" if exists else "Created"
        return ToolResult(True, f"{verb} {rel} ({len(data)} bytes written).")

    return Pending(request, commit)


# ---------------------------------------------------------------- edit_file


def edit_file(ctx: ToolContext, args: dict[str, Any]) -> Pending:
    """Validate an exact-string replacement and return it pending approval."""
    path = resolve_in_workspace(ctx.workspace, args["path"])
    rel = display(ctx.workspace, path)
    old_string: str = args["old_string"]
    new_string: str = args["new_string"]
    replace_all: bool = args.get("replace_all", False)
    _require_file(path, rel)
    if old_string == "":
        raise ToolError("old_string is empty; give the exact text to replace.")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    try:
        original = _read_text(path, rel)
    except OSError as exc:
        raise ToolError(f"Could not read {rel}: {describe_os_error(exc)}.") from None
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

    def request() -> ApprovalRequest:
        return ApprovalRequest(
            "edit_file", one_line(f"edit_file {rel}"), unified_diff(original, updated, rel)
        )

    def commit() -> ToolResult:
        try:
            current = _read_text(path, rel)
        except OSError as exc:
            raise ToolError(f"Could not read {rel}: {describe_os_error(exc)}.") from None
        if current != original:
            raise ToolError(f"{rel} changed while the edit waited; read it again and retry.")
        try:
            path.write_bytes(updated.encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"Could not write {rel}: {describe_os_error(exc)}.") from None
        noun = "occurrence" if replaced == 1 else "occurrences"
        return ToolResult(True, f"Edited {rel}: replaced {replaced} {noun}.")

    return Pending(request, commit)


# ---------------------------------------------------------------- list_dir


def list_dir(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Sorted entries of a directory; directories end with "/"."""
    path = resolve_in_workspace(ctx.workspace, args.get("path", "."), default=".")
    rel = display(ctx.workspace, path)
    if not path.exists():
        raise ToolError(f"Directory not found: {rel}.")
    if not path.is_dir():
        raise ToolError(f"{rel} is a file, not a directory; use read_file to read it.")
    try:
        with os.scandir(path) as it:
            entries = []
            for entry in it:
                if entry.name in SKIP_IN_LISTING:
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                entries.append(entry.name + ("/" if is_dir else ""))
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
