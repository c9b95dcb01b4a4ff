"""git starts only in agent/gitsafe.py, whose environment makes repository config inert (H8).

An AST scan of agent/, storage/ and hermes_tui/: outside gitsafe.py no code names the git
program (a `"git"` literal: an argv `["git", ...]`, a `_command`-style helper, `which`),
starts a process with a command line that begins with git (`"git status"` to a shell), or
reaches into gitsafe's private command builder to start git with an environment of its own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import parsed_sources

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("agent", "storage", "hermes_tui")
THE_ONE_MODULE = ROOT / "agent" / "gitsafe.py"

_GIT_PROGRAM = re.compile(r"^(?:\S*/)?git(?:\.exe)?$")
_GIT_COMMAND_LINE = re.compile(r"^\s*(?:\S*/)?git(?:\.exe)?(?:\s|$)")
_STARTERS = {
    "run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput",
    "system", "popen", "spawn", "create_subprocess_exec", "create_subprocess_shell",
    "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
    "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe",
    "posix_spawn", "posix_spawnp",
}  # fmt: skip
"""Names of the calls that start a process (subprocess, os, asyncio, pty)."""


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    found.add(id(statement.value))
    return found


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _leading_text(node: ast.AST) -> str | None:
    """The text a command argument starts with: a string, an f-string's head, a list's first."""
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return _leading_text(node.elts[0])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _leading_text(node.values[0])
    return None


def violations(source: str, where: str) -> Iterator[str]:
    """Each place in `source` that starts git other than through gitsafe."""
    return tree_violations(ast.parse(source), where)


def tree_violations(tree: ast.Module, where: str) -> Iterator[str]:
    """Each place in the parsed module `tree` that starts git other than through gitsafe."""
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and _GIT_PROGRAM.match(node.value):
                yield f"{line}: names the git program ({node.value!r})"
        elif isinstance(node, ast.Call) and _called(node) in _STARTERS:
            argv = [*node.args[:2], *(k.value for k in node.keywords if k.arg in ("args", "cmd"))]
            if any(_GIT_COMMAND_LINE.match(_leading_text(arg) or "") for arg in argv):
                yield f"{line}: starts git itself"
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == "gitsafe":
                yield f"{line}: reaches into gitsafe.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("gitsafe"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield f"{line}: imports gitsafe.{alias.name}"


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in parsed_sources.python_files(ROOT, SCANNED):
        if path != THE_ONE_MODULE:
            yield path, parsed_sources.tree(path)


def test_git_starts_nowhere_but_in_gitsafe():
    found = [
        problem
        for path, tree in _sources()
        for problem in tree_violations(tree, str(path.relative_to(ROOT)))
    ]
    assert found == [], (
        "every git command goes through agent/gitsafe.py (run/start with inert_env), "
        f"so that no repository config runs: {found}"
    )


def test_the_scan_sees_each_way_of_starting_git():
    planted = '''
"""A module docstring may say git."""
import subprocess, os, asyncio
from agent.gitsafe import _argv
subprocess.run(["git", "status"], cwd=".")
subprocess.Popen(args=("/usr/bin/git", "log"))
os.system("git status")
subprocess.check_output(f"git {verb}", shell=True)
asyncio.create_subprocess_exec(GIT, "diff")
GIT = "git"
def _command(args):
    return ["git", *args]
subprocess.run(gitsafe._argv(["diff"]), env=os.environ)
'''
    found = list(violations(planted, "planted.py"))
    lines = sorted({int(problem.split(":")[1]) for problem in found})
    assert lines == [4, 5, 6, 7, 8, 10, 12, 13], found
    fine = 'message = f"git {verb} failed"\nsubprocess.run(["bwrap", "git"])\n'
    assert [p for p in violations(fine, "fine.py") if "starts" in p] == []
