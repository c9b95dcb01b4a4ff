"""Search tools: glob (find files by name pattern) and grep (search file contents)."""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.tools import paths
from agent.tools.files import BINARY_SNIFF
from agent.tools.paths import display
from agent.tools.registry import Tool, ToolContext, ToolError, ToolResult, describe_os_error

SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})
MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 500
MAX_GREP_LINE = 300
MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
MAX_WALK_DEPTH = 256  # each level holds a descriptor; deeper trees are not searched


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob over "/"-separated paths: `**` spans directories, `*` and `?` do not."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    i += 1
                    out.append("(?:.*/)?")
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern.startswith(("[!", "[]"), i) else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _walk(base: paths.Target, skip: frozenset[str]) -> Iterator[tuple[Path, bool, int]]:
    """Yield (path, is_dir, dir_fd) under `base`, pruning `skip`, never following a link.

    Each directory is opened relative to its parent's descriptor with O_NOFOLLOW, so one
    swapped for a link (or a FIFO) meanwhile is skipped, and the walk never leaves the
    workspace; a link is yielded as a plain entry. `dir_fd` holds the entry, valid until
    the next item.
    """
    try:
        top = paths.open_dir(base)
    except OSError as exc:
        raise ToolError(f"Could not open {base.rel}: {describe_os_error(exc)}.") from None
    stack: list[tuple[int, Iterator[tuple[Path, bool]]]] = []
    try:
        stack.append((top, _entries(top, base.path, skip)))
        while stack:
            fd, entries = stack[-1]
            item = next(entries, None)
            if item is None:
                stack.pop()
                os.close(fd)
                continue
            path, is_dir = item
            yield path, is_dir, fd
            if is_dir and len(stack) < MAX_WALK_DEPTH:
                try:
                    child = os.open(path.name, paths.DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                stack.append((child, _entries(child, path, skip)))
    finally:
        for fd, _entries_left in stack:
            os.close(fd)


def _entries(fd: int, path: Path, skip: frozenset[str]) -> Iterator[tuple[Path, bool]]:
    """The sorted entries of the open directory `fd`: its files first, then its directories.

    Directories come last so that a directory's own files are listed before its subtrees.
    """
    try:
        with os.scandir(fd) as it:
            found = sorted(it, key=lambda entry: entry.name)
    except OSError:
        return
    dirs = []
    for entry in found:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if not is_dir:
            yield path / entry.name, False
        elif entry.name not in skip:
            dirs.append(entry.name)
    for name in dirs:
        yield path / name, True


def _read_entry(name: str, dir_fd: int) -> bytes | None:
    """The bytes of the regular file `name` in `dir_fd`, or None (link, special, too big)."""
    try:
        fd = os.open(name, paths.READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GREP_FILE_BYTES:
            return None
        os.set_blocking(fd, True)
        chunks = []
        size = 0
        while size <= MAX_GREP_FILE_BYTES and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _skip_for(*texts: str) -> frozenset[str]:
    """The noise directories to prune, except those the caller named explicitly."""
    named = set()
    for text in texts:
        named.update(part for part in re.split(r"[\\/]", text) if part in SKIP_DIRS)
    return SKIP_DIRS - named


# ---------------------------------------------------------------- glob


def glob_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Paths under `path` matching `pattern`, relative to the workspace, sorted."""
    pattern: str = args["pattern"].strip()
    raw_base = args.get("path", ".")
    if not pattern:
        raise ToolError("pattern is empty; give a glob such as '**/*.py'.")
    if pattern.startswith("/") or os.path.isabs(pattern):
        raise ToolError(
            "pattern must be relative (such as 'src/**/*.py'); put the directory in path."
        )
    if ".." in pattern.split("/"):
        raise ToolError("pattern must not contain '..'; put the directory in path instead.")
    base = paths.resolve(ctx.workspace, raw_base, default=".")
    rel_base = base.rel
    if base.final is None:
        raise ToolError(f"Directory not found: {rel_base}.")
    if not base.final.is_dir:
        raise ToolError(f"{rel_base} is a file, not a directory.")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    matcher = glob_to_regex(pattern)
    matches: list[str] = []
    total = 0
    for path, is_dir, _dir_fd in _walk(base, _skip_for(pattern, str(raw_base or "."))):
        rel_to_base = path.relative_to(base.path).as_posix()
        if not matcher.match(rel_to_base):
            continue
        total += 1
        if len(matches) < MAX_GLOB_RESULTS:
            matches.append(display(ctx.workspace, path) + ("/" if is_dir else ""))
    if not matches:
        return ToolResult(True, f"No paths match {pattern!r} in {rel_base}.")
    matches.sort()
    text = "\n".join(matches)
    if total > len(matches):
        text += f"\n[... {total - len(matches)} more matches not shown; narrow the pattern ...]"
    return ToolResult(True, text)


# ---------------------------------------------------------------- grep


def _read_target(target: paths.Target) -> bytes | None:
    """The bytes of a file named as grep's path, or None if it is not a searchable file."""
    if target.final is None or not target.final.is_file:
        return None
    if target.final.size > MAX_GREP_FILE_BYTES:
        return None
    try:
        return paths.read_bytes(target)
    except OSError:
        return None


def _file_filter(glob: str | None) -> Any:
    if not glob:
        return lambda rel_path: True
    if "/" in glob:
        regex = glob_to_regex(glob.removeprefix("./"))
        return lambda rel_path: bool(regex.match(rel_path))
    return lambda rel_path: fnmatch.fnmatchcase(rel_path.rsplit("/", 1)[-1], glob)


def grep_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Lines matching a Python regex, as `file:line: text`, skipping binary and noise files."""
    pattern: str = args["pattern"]
    raw_base = args.get("path", ".")
    glob: str | None = args.get("glob") or None
    flags = re.IGNORECASE if args.get("ignore_case", False) else 0
    if pattern == "":
        raise ToolError("pattern is empty; give a regular expression to search for.")
    try:
        regex = re.compile(pattern, flags)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}.") from None
    except (RecursionError, OverflowError):
        raise ToolError(f"Invalid regular expression {pattern!r}: it is too complex.") from None
    base = paths.resolve(ctx.workspace, raw_base, default=".")
    rel_base = base.rel
    if base.final is None:
        raise ToolError(f"Path not found: {rel_base}.")
    if base.final.is_dir:
        wanted = _file_filter(glob)
        candidates = (
            (path, lambda path=path, fd=dir_fd: _read_entry(path.name, fd))
            for path, is_dir, dir_fd in _walk(base, _skip_for(str(raw_base or ".")))
            if not is_dir and wanted(path.relative_to(base.path).as_posix())
        )
    else:
        candidates = iter([(base.path, lambda: _read_target(base))])
    lines: list[str] = []
    total = 0
    files_with_matches = 0
    budget = max(ctx.output_cap - 200, 1000)
    used = 0
    for path, read in candidates:
        if ctx.cancel is not None and ctx.cancel.is_set():
            raise ToolError("The search was cancelled.")
        data = read()
        if data is None or b"\0" in data[:BINARY_SNIFF]:
            continue
        text = data.decode("utf-8", errors="replace")
        rel = display(ctx.workspace, path)
        hit = False
        for number, line in enumerate(text.splitlines(), start=1):
            if not regex.search(line):
                continue
            hit = True
            total += 1
            if len(lines) >= MAX_GREP_MATCHES or used >= budget:
                continue
            if len(line) > MAX_GREP_LINE:
                line = line[:MAX_GREP_LINE] + "…"
            row = f"{rel}:{number}: {line}"
            lines.append(row)
            used += len(row) + 1
        files_with_matches += hit
    if not lines:
        where = rel_base + (f" (files matching {glob!r})" if glob else "")
        return ToolResult(True, f"No matches for {pattern!r} in {where}.")
    out = "\n".join(lines)
    if total > len(lines):
        out += (
            f"\n[... {total - len(lines)} more matches not shown "
            f"({total} in {files_with_matches} files); narrow the pattern or path ...]"
        )
    return ToolResult(True, out)


TOOLS = [
    Tool(
        name="glob",
        description=(
            "Find files and directories in the workspace whose path matches a glob pattern. "
            "'*' matches within one directory level, '**' matches any number of levels "
            "(use '**/*.py' to search recursively). Returns paths relative to the workspace, "
            "sorted; directories end with '/'. .git, node_modules, .venv and __pycache__ are "
            "skipped unless named in the pattern."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern relative to path, e.g. '**/*.py' or 'src/*.ts'.",
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search in, relative to the workspace "
                    "(default '.').",
                },
            },
            "required": ["pattern"],
        },
        handler=glob_tool,
        kind="read",
        summary_keys=("pattern", "path"),
    ),
    Tool(
        name="grep",
        description=(
            "Search file contents with a Python regular expression. Returns matching lines as "
            "'file:line: text'. Binary files, .git, node_modules, .venv and __pycache__ are "
            "skipped."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Python regular expression to search for.",
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace "
                    "(default '.').",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose name matches this glob, e.g. "
                    "'*.py' (or whose path matches, if it contains '/').",
                },
                "ignore_case": {
                    "type": "boolean",
                    "description": "Match case-insensitively (default false).",
                },
            },
            "required": ["pattern"],
        },
        handler=grep_tool,
        kind="read",
        summary_keys=("pattern", "path"),
    ),
]
