"""Search tools: glob (find files by name pattern) and grep (search file contents).

Both match with RE2 (google-re2), whose time is linear in the text: a pattern such as
`(a+)+$` cannot make a search take exponential time, as Python's backtracking `re` does.
RE2 still cannot be interrupted inside one search call and costs up to about text length x
program size at its slowest, so grep hands it bounded slices of a file and checks the stop
event between them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import re2

from agent.tools.files import BINARY_SNIFF
from agent.tools.paths import display, is_inside, resolve_in_workspace
from agent.tools.registry import Tool, ToolContext, ToolError, ToolResult

SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})
MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 500
MAX_GREP_LINE = 300
MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
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


def _walk(base: Path, skip: frozenset[str]) -> Iterator[tuple[Path, bool]]:
    """Yield (path, is_dir) under `base`, not following symlinked dirs, pruning `skip`."""
    for root, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        root_path = Path(root)
        for d in dirs:
            yield root_path / d, True
        for f in sorted(files):
            yield root_path / f, False


def _skip_for(*texts: str) -> frozenset[str]:
    """The noise directories to prune, except those the caller named explicitly."""
    named = set()
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
    base = resolve_in_workspace(ctx.workspace, raw_base, default=".")
    rel_base = display(ctx.workspace, base)
    if not base.exists():
        raise ToolError(f"Directory not found: {rel_base}.")
    if not base.is_dir():
        raise ToolError(f"{rel_base} is a file, not a directory.")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    matcher = glob_to_regex(pattern)
    matches: list[str] = []
    total = 0
    for path, is_dir in _walk(base, _skip_for(pattern, str(raw_base or "."))):
        _check_cancel(ctx)
        if not matcher.match(os.fsencode(path.relative_to(base).as_posix())):
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
    base = resolve_in_workspace(ctx.workspace, raw_base, default=".")
    rel_base = display(ctx.workspace, base)
    if not base.exists():
        raise ToolError(f"Path not found: {rel_base}.")
    if base.is_dir():
        wanted = _file_filter(glob)
        entries: Iterator[tuple[Path, bool]] = _walk(base, _skip_for(str(raw_base or ".")))
    else:
        wanted = lambda rel_path: True  # noqa: E731
        entries = iter([(base, False)])
    grep = _Grep(regex, ctx)
    for path, is_dir in entries:
        if grep.halted():
            break
        if is_dir or not wanted(path.relative_to(base).as_posix()):
            continue
        try:
            real = path.resolve()
            if not is_inside(ctx.workspace, real) or not real.is_file():
                continue
            if real.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            data = real.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:BINARY_SNIFF]:
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
            "Search file contents, line by line, with a regular expression in RE2 syntax (Python "
            "re syntax without lookaround or backreferences; \\w, \\d and \\b are ASCII). "
            "Returns matching lines as 'file:line: text'. Binary files, .git, node_modules, "
            ".venv and __pycache__ are skipped."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression (RE2 syntax) to search for.",
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
