"""Search tools: glob (find files by name pattern) and grep (search file contents).

Both match with RE2 (google-re2), whose time is linear in the text: a pattern such as
`(a+)+$` cannot make a search take exponential time, as Python's backtracking `re` does.
RE2 still cannot be interrupted inside one search call and costs up to about text length x
program size at its slowest, so grep hands it bounded slices of a file and checks the stop
event between them.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import re2

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
MAX_GREP_COUNT = 10_000  # matching lines counted before grep stops looking for more
MAX_GREP_SECONDS = 60.0  # a search still running after this returns what it found
# The most work (bytes searched x RE2 program size) handed to one uninterruptible RE2 call:
# at RE2's slowest (its NFA, 3 to 5 ns per unit on a shared laptop-class core) that is a
# sixth of a second, so a stop lands well within a second even on a loaded machine. A line
# longer than this allows for the pattern is skipped, and the result says so.
GREP_SLICE_WORK = 1 << 25

_UNSUPPORTED = (
    (("(?=", "(?!"), "lookahead ((?=...) and (?!...))"),
    (("(?<=", "(?<!"), "lookbehind ((?<=...) and (?<!...))"),
    (("(?P=", *(f"\\{d}" for d in range(1, 10))), "backreferences (\\1, (?P=name))"),
    (("(?>",), "atomic groups ((?>...))"),
    (("\\Z",), "\\Z (use $ or \\z)"),
    (("(?x",), "verbose mode ((?x))"),
    (("*+", "++", "?+", "}+"), "possessive quantifiers (*+, ++)"),
)


def _options(*, ignore_case: bool = False, line_by_line: bool = False) -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its parse errors on the user's terminal
    options.case_sensitive = not ignore_case
    # No match may span a newline, so one search call covers many lines with line semantics.
    options.never_nl = line_by_line
    return options


def regex_error(pattern: str, exc: Exception, what: str = "regular expression") -> ToolError:
    """One sentence for a pattern RE2 refuses, naming the Python-only syntax it lacks."""
    reason = exc.args[0] if exc.args else str(exc)
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    for markers, feature in _UNSUPPORTED:
        if any(marker in reason or marker in pattern for marker in markers):
            return ToolError(
                f"Unsupported {what} {pattern!r}: the search engine (RE2, linear-time) has no "
                f"{feature}; rewrite the pattern without it."
            )
    return ToolError(f"Invalid {what} {pattern!r}: {reason}.")


def glob_to_regex(pattern: str) -> Any:
    """Compile a glob over "/"-separated paths: `**` spans directories, `*` and `?` do not.

    The result is an RE2 pattern: match it against the path (str, or bytes from os.fsencode).
    """
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
                out.append(re2.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re2.escape(c))
        i += 1
    try:
        return re2.compile("(?s)" + "".join(out) + r"\z", _options())
    except re2.error as exc:
        raise regex_error(pattern, exc, "glob pattern") from None


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
    named: set[str] = set()
    for text in texts:
        named.update(part for part in re.split(r"[\\/]", text) if part in SKIP_DIRS)
    return SKIP_DIRS - named


def _check_cancel(ctx: ToolContext) -> None:
    """End the search at once when the turn was stopped."""
    if ctx.cancel is not None and ctx.cancel.is_set():
        raise ToolError("The search was cancelled.")


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
        _check_cancel(ctx)
        if not matcher.match(os.fsencode(path.relative_to(base.path).as_posix())):
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


def _file_filter(glob: str | None) -> Callable[[str], bool]:
    if not glob:
        return lambda rel_path: True
    regex = glob_to_regex(glob.removeprefix("./"))
    if "/" in glob:
        return lambda rel_path: bool(regex.match(os.fsencode(rel_path)))
    return lambda rel_path: bool(regex.match(os.fsencode(rel_path.rsplit("/", 1)[-1])))


class _Grep:
    """One grep call: the compiled pattern, its limits, and the matches found so far."""

    def __init__(self, regex: Any, ctx: ToolContext) -> None:
        self.regex = regex
        self.ctx = ctx
        # The longest stretch of lines one RE2 call may search for this pattern.
        self.slice_bytes = max(GREP_SLICE_WORK // max(regex.programsize, 1), 1)
        self.deadline = time.monotonic() + MAX_GREP_SECONDS
        self.lines: list[str] = []
        self.total = 0
        self.files_with_matches = 0
        self.long_lines = 0
        self.halt = ""  # "" | "count" | "time": why the search ended early
        self.budget = max(ctx.output_cap - 200, 1000)
        self.used = 0

    def halted(self) -> bool:
        """True once the search must end; raises ToolError when the turn was stopped."""
        _check_cancel(self.ctx)
        if not self.halt:
            if self.total >= MAX_GREP_COUNT:
                self.halt = "count"
            elif time.monotonic() > self.deadline:
                self.halt = "time"
        return bool(self.halt)

    def search(self, rel: str, data: bytes) -> None:
        """Record the lines of one file's text that match, a bounded slice per RE2 call."""
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        # A final newline ends the last line; it does not start an empty one.
        limit = len(data) - 1 if data.endswith(b"\n") else len(data)
        search = self.regex.search
        pos, line_no, counted_to, hit = 0, 1, 0, False
        while pos <= limit and not self.halted():
            if limit - pos <= self.slice_bytes:
                end = limit
            else:
                end = data.rfind(b"\n", pos, pos + self.slice_bytes + 1)
                if end < 0:  # one line longer than a slice: too costly for this pattern
                    self.long_lines += 1
                    nl = data.find(b"\n", pos)
                    pos = limit + 1 if nl < 0 else nl + 1
                    continue
            while pos <= end and not self.halted():
                match = search(data, pos, end)
                if match is None:
                    break
                start = match.start()
                line_start = max(data.rfind(b"\n", pos, start) + 1, pos)
                line_end = data.find(b"\n", start, end)
                line_end = end if line_end < 0 else line_end
                line_no += data.count(b"\n", counted_to, line_start)
                counted_to = line_start
                hit = True
                self._record(rel, line_no, data, line_start, line_end)
                pos = line_end + 1
            pos = max(pos, end + 1)
        self.files_with_matches += hit

    def _record(self, rel: str, line_no: int, data: bytes, start: int, end: int) -> None:
        self.total += 1
        if len(self.lines) >= MAX_GREP_MATCHES or self.used >= self.budget:
            return
        # Decode only what can be shown: a character is at most four bytes.
        line = data[start : min(end, start + 4 * MAX_GREP_LINE + 4)].decode("utf-8", "replace")
        if len(line) > MAX_GREP_LINE:
            line = line[:MAX_GREP_LINE] + "…"
        row = f"{rel}:{line_no}: {line}"
        self.lines.append(row)
        self.used += len(row) + 1

    def notes(self) -> list[str]:
        """Lines that say what the search left out."""
        notes = []
        if self.total > len(self.lines):
            counted = f"at least {self.total}" if self.halt == "count" else str(self.total)
            notes.append(
                f"[... {self.total - len(self.lines)} more matches not shown "
                f"({counted} in {self.files_with_matches} files); narrow the pattern or path ...]"
            )
        elif self.halt == "count":
            notes.append(
                f"[... the search stopped at {self.total} matches; narrow the pattern or path ...]"
            )
        if self.halt == "time":
            notes.append(
                f"[... the search stopped after {MAX_GREP_SECONDS:g} s; "
                "narrow the path or glob to search the rest ...]"
            )
        if self.long_lines:
            lines = "1 line" if self.long_lines == 1 else f"{self.long_lines} lines"
            notes.append(
                f"[... {lines} longer than {max(self.slice_bytes // 1024, 1)} KB not searched: "
                "this pattern is too costly for them; a simpler one searches longer lines ...]"
            )
        return notes


def _candidates(
    base: paths.Target, glob: str | None, raw_base: str
) -> Iterator[tuple[Path, Callable[[], bytes | None] | None]]:
    """Every entry grep walks past, with how to read it (None: not searched).

    Entries that are not searched are yielded too, so the stop is checked at each of them.
    """
    assert base.final is not None, "grep_tool refuses a path that is not there"
    if not base.final.is_dir:
        yield base.path, lambda: _read_target(base)
        return
    wanted = _file_filter(glob)
    for path, is_dir, dir_fd in _walk(base, _skip_for(str(raw_base or "."))):
        if is_dir or not wanted(path.relative_to(base.path).as_posix()):
            yield path, None
        else:
            # The entry's directory descriptor is valid until the walk moves on.
            yield path, functools.partial(_read_entry, path.name, dir_fd)


def grep_tool(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Lines matching an RE2 regex, as `file:line: text`, skipping binary and noise files."""
    pattern: str = args["pattern"]
    raw_base = args.get("path", ".")
    glob: str | None = args.get("glob") or None
    if pattern == "":
        raise ToolError("pattern is empty; give a regular expression to search for.")
    options = _options(ignore_case=bool(args.get("ignore_case", False)), line_by_line=True)
    try:
        # (?m): ^ and $ match at line ends, since each search call covers many lines.
        regex = re2.compile("(?m)" + pattern, options)
    except re2.error as exc:
        raise regex_error(pattern, exc) from None
    base = paths.resolve(ctx.workspace, raw_base, default=".")
    rel_base = base.rel
    if base.final is None:
        raise ToolError(f"Path not found: {rel_base}.")
    grep = _Grep(regex, ctx)
    for path, read in _candidates(base, glob, raw_base):
        if grep.halted():
            break
        data = None if read is None else read()
        if data is None or b"\0" in data[:BINARY_SNIFF]:
            continue
        grep.search(display(ctx.workspace, path), data)
    lines = grep.lines
    if not lines:
        where = rel_base + (f" (files matching {glob!r})" if glob else "")
        lines = [f"No matches for {pattern!r} in {where}."]
    return ToolResult(True, "\n".join([*lines, *grep.notes()]))


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
            "Search file contents with an RE2 regex (no lookaround, no backreferences). Returns "
            "matching lines as 'file:line: text'. Binary files, .git, node_modules, .venv and "
            "__pycache__ are skipped."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regex to search for.",
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
