"""Tests wait on conditions through tests/waits.py, and never sleep to let things settle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import parsed_sources

TESTS = Path(__file__).resolve().parents[2]
WAITS = TESTS / "waits.py"


def _test_sources() -> Iterator[tuple[Path, ast.Module, list[str]]]:
    for path in sorted(TESTS.rglob("*.py")):
        if path == WAITS:
            continue
        yield path, parsed_sources.tree(path), parsed_sources.source(path).splitlines()


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(TESTS)}:{node.lineno}"


def _awaited_calls(tree: ast.Module) -> set[int]:
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Await)}


def _called_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{owner}.{func.attr}"
    return ""


def test_the_pilot_form_is_awaited_and_the_thread_form_is_not():
    # wait_until(pilot, predicate) returns a coroutine: without `await` it waits for nothing.
    wrong = []
    for path, tree, _ in _test_sources():
        awaited = _awaited_calls(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) == "wait_until":
                pilot_form = len(node.args) >= 2
                if pilot_form != (id(node) in awaited):
                    form = (
                        "wait_until(pilot, ...) needs" if pilot_form else "wait_until(...) takes no"
                    )
                    wrong.append(f"{_where(path, node)}: {form} await")
    assert wrong == []


def test_every_sleep_says_why_it_is_not_a_wait():
    # A sleep that waits for a state is a flake on a busy machine: wait on the state instead.
    # (A polling helper of a test's own needs a sleep too, so this also keeps waits.py the
    # one home of polling.)
    # What stays is time that is the test's subject (random moments, a duration that must pass
    # with nothing happening), and the line says so.
    sleeps = {"time.sleep", "asyncio.sleep", "pilot.pause"}
    silent = []
    for path, tree, lines in _test_sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in sleeps and node.args:
                same_line, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
                if "#" not in same_line and not above.startswith("#"):
                    silent.append(_where(path, node))
    assert silent == []
