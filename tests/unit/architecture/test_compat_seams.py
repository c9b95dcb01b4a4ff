"""Dependencies' internals are touched only in their compat modules (#28 item 3).

Every private of Textual, the SDKs, httpx2/httpcore2 and aiosqlite that the code relies on
lives in one compat module per dependency, whose tests say which one an upgrade broke. This
scan keeps the rest of agent/, storage/ and hermes_tui/ off them:

- no import of a dependency's private module or name (`from textual.widgets._markdown`,
  `import httpx2._utils`, `from x import _y`);
- no private attribute (`._x`, or `getattr(obj, "_x")`) that our own code does not define:
  on `self`, `cls` or `super()` the name must be one our code defines somewhere; on anything
  else, one defined in the same file or reached through one of our own modules or classes;
  on a dependency module, none at all;
- no replacing a response body (`response.stream = ...`) outside httpx's compat module;
- no method overriding a dependency class's private one, unless Textual's compat module
  lists it as a private handler (those are checked there against Textual).

The scan is a heuristic: a private of a dependency that happens to share its name with one
of ours in the same file is not seen. It has no false positives on our code.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import parsed_sources

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("agent", "storage", "hermes_tui")
OURS = frozenset({*PACKAGES, "bench", "themes", "tests"})

# The only modules that may touch a dependency's internals, one per dependency.
COMPAT_MODULES = {
    "hermes_tui/textual_compat.py": "textual",
    "agent/providers/sdk_compat.py": "openai, anthropic",
    "agent/httpx_compat.py": "httpx2, httpcore2",
    "storage/aiosqlite_compat.py": "aiosqlite",
}

TEMPORARY: dict[str, set[str]] = {}
"""Touches allowed outside the compat modules for one merge's time (none now)."""

# Underscore names that are public API or stable parts of the standard library.
STDLIB_NAMES = frozenset(
    {
        # namedtuple's public API (underscored so as not to clash with field names).
        "_asdict",
        "_replace",
        "_fields",
        "_make",
        # http.server's header buffer: the scripted server sends headers and body in one
        # write; the standard library moves with the Python version, not a pin of ours.
        "_headers_buffer",
    }
)

ACCESSORS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _root(module: str) -> str:
    return module.split(".")[0]


@dataclass
class Defined:
    """The private names our code defines: anywhere (`everywhere`) and per file."""

    everywhere: set[str] = field(default_factory=set)
    per_file: dict[str, set[str]] = field(default_factory=dict)


def _defined_in(tree: ast.AST) -> set[str]:
    """Names a module defines: functions, classes, assignments at module or class level,
    and attributes it stores on `self` or `cls`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    targets = item.targets if isinstance(item, ast.Assign) else []
                    if isinstance(item, ast.AnnAssign):
                        targets = [item.target]
                    names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
    for item in getattr(tree, "body", []):
        if isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    return names


def _imported_names(tree: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """Local names bound to our modules or classes, to dependencies' (third-party) modules,
    and to the standard library's modules."""
    ours: set[str] = set()
    theirs: set[str] = set()
    stdlib: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or _root(alias.name)
                if _root(alias.name) in OURS:
                    ours.add(local)
                elif _root(alias.name) in sys.stdlib_module_names:
                    stdlib.add(local)
                else:
                    theirs.add(local)
        elif isinstance(node, ast.ImportFrom):
            mine = node.level > 0 or _root(node.module or "") in OURS
            if mine:
                ours.update(alias.asname or alias.name for alias in node.names)
    return ours, theirs, stdlib


def _is_self(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def file_violations(rel: str, tree: ast.AST, defined: Defined) -> list[str]:
    """Every touch of a dependency's internals in one module, as `path:line: what`."""
    here = defined.per_file.get(rel, set())
    ours, theirs, stdlib = _imported_names(tree)
    found: list[str] = []

    def private_access(line: int, owner: ast.expr, name: str) -> None:
        if not _is_private(name) or name in STDLIB_NAMES:
            return
        text = f"{ast.unparse(owner)}.{name}"
        if isinstance(owner, ast.Name) and owner.id in stdlib:
            return  # the standard library's underscored functions (os._exit) are its API
        if isinstance(owner, ast.Name) and owner.id in theirs:
            found.append(f"{rel}:{line}: private name of a dependency module: {text}")
        elif _is_self(owner) or (isinstance(owner, ast.Name) and owner.id in ours):
            if name not in defined.everywhere:
                found.append(f"{rel}:{line}: private attribute our code never defines: {text}")
        elif name not in here:
            found.append(f"{rel}:{line}: private attribute of another object: {text}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] not in OURS and any(_is_private(p) for p in parts[1:]):
                    found.append(f"{rel}:{node.lineno}: private module: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] in OURS or parts[0] == "__future__":
                continue
            if any(_is_private(p) for p in parts[1:]):
                found.append(f"{rel}:{node.lineno}: private module: from {node.module} import")
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(
                        f"{rel}:{node.lineno}: private name: from {node.module} import {alias.name}"
                    )
        elif isinstance(node, ast.Attribute):
            private_access(node.lineno, node.value, node.attr)
            if (
                node.attr == "stream"
                and isinstance(node.ctx, ast.Store)
                and not _is_self(node.value)
            ):
                found.append(
                    f"{rel}:{node.lineno}: replaces a response body: "
                    f"{ast.unparse(node.value)}.stream ="
                )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ACCESSORS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            private_access(node.lineno, node.args[0], node.args[1].value)
    return found


def _sources(root: Path) -> dict[str, ast.AST]:
    return {
        path.relative_to(root).as_posix(): parsed_sources.tree(path)
        for path in parsed_sources.python_files(root, PACKAGES)
    }


def _defined(trees: dict[str, ast.AST]) -> Defined:
    defined = Defined()
    for rel, tree in trees.items():
        names = _defined_in(tree)
        defined.per_file[rel] = names
        defined.everywhere |= names
    return defined


def tree_violations(root: Path) -> list[str]:
    """Every touch of a dependency's internals outside the compat modules (and the
    temporary allowance)."""
    trees = _sources(root)
    defined = _defined(trees)
    found = []
    for rel, tree in trees.items():
        if rel in COMPAT_MODULES:
            continue
        allowed = TEMPORARY.get(rel, set())
        for violation in file_violations(rel, tree, defined):
            if violation.split(": ", 1)[1] not in allowed:
                found.append(violation)
    return found


def test_dependency_internals_are_touched_only_in_compat_modules():
    violations = tree_violations(ROOT)
    assert violations == [], (
        "Move each of these into the dependency's compat module "
        f"({', '.join(COMPAT_MODULES)}), with a docstring and a test:\n" + "\n".join(violations)
    )


def test_the_temporary_allowance_is_still_needed():
    # Once agent/mcp/http.py's touch has moved, its allowance must go too.
    trees = _sources(ROOT)
    defined = _defined(trees)
    for rel, allowed in TEMPORARY.items():
        seen = {v.split(": ", 1)[1] for v in file_violations(rel, trees[rel], defined)}
        assert allowed <= seen, f"{rel} no longer does {allowed - seen}: drop it from TEMPORARY"


PLANTED = """
import os
import httpx2._utils
from textual.widgets._markdown import MarkdownBlock
from textual.app import _private_thing
import httpx2
from agent.providers import wire


class Shown:
    def __init__(self, app, response):
        self._mine = 1
        app._filters.append(None)
        self._anchor_released
        super()._get_component_classes()
        getattr(response, "_network_stream", None)
        httpx2._utils
        response.stream = None
        self._mine
        wire.client_sockets
        event._asdict()
        os._exit(0)
"""


def test_a_planted_violation_is_reported(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "planted.py").write_text(PLANTED, encoding="utf-8")
    (tmp_path / "hermes_tui").mkdir()
    (tmp_path / "hermes_tui" / "textual_compat.py").write_text(
        "def f(app):\n    app._filters.append(None)\n", encoding="utf-8"
    )
    found = sorted(v.split(": ", 1)[1] for v in tree_violations(tmp_path))
    assert found == sorted(
        [
            "private module: import httpx2._utils",
            "private module: from textual.widgets._markdown import",
            "private name: from textual.app import _private_thing",
            "private attribute of another object: app._filters",
            "private attribute our code never defines: self._anchor_released",
            "private attribute our code never defines: super()._get_component_classes",
            "private attribute of another object: response._network_stream",
            "private name of a dependency module: httpx2._utils",
            "replaces a response body: response.stream =",
        ]
    )


def test_our_own_private_names_are_not_reported(tmp_path):
    # self/cls, our own module's names and namedtuple's API are ours to use.
    (tmp_path / "storage").mkdir()
    (tmp_path / "storage" / "own.py").write_text(
        "from storage import other\n"
        "class A:\n"
        "    _slot = 1\n"
        "    def _step(self):\n"
        "        self._count = 0\n"
        "        return self._count, cls._slot, other._helper, A._step, self._step\n"
        "def run(a, event):\n"
        "    return a._count, event._asdict(), getattr(a, '_step')\n",
        encoding="utf-8",
    )
    (tmp_path / "storage" / "other.py").write_text("def _helper():\n    pass\n")
    assert tree_violations(tmp_path) == []


# -- methods overriding a dependency's private ones --------------------------------------------


def _our_modules():
    for package in PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if info.name.endswith("__main__"):
                continue  # running it starts the app
            yield importlib.import_module(info.name)


def _registered_handlers() -> set[tuple[type, str]]:
    from hermes_tui.textual_compat import PRIVATE_HANDLERS

    return {
        (getattr(importlib.import_module(module), cls), name)
        for module, cls, name in PRIVATE_HANDLERS
    }


def private_overrides(classes, registered: set[tuple[type, str]]) -> list[str]:
    """Methods of `classes` overriding a private one of a third-party class, not registered."""
    found = []
    for cls in classes:
        for name, value in vars(cls).items():
            if not _is_private(name) or getattr(value, "__module__", None) != cls.__module__:
                continue
            for base in cls.__mro__[1:]:
                top = _root(base.__module__)
                if top in OURS or top in sys.stdlib_module_names or name not in vars(base):
                    continue
                if (base, name) not in registered:
                    found.append(f"{cls.__module__}.{cls.__qualname__}.{name} overrides {base}")
                break
    return found


def test_private_overrides_are_only_the_registered_handlers():
    compat = {path.removesuffix(".py").replace("/", ".") for path in COMPAT_MODULES}
    classes = [
        value
        for module in _our_modules()
        if module.__name__ not in compat
        for value in vars(module).values()
        if inspect.isclass(value) and value.__module__ == module.__name__
    ]
    assert private_overrides(classes, _registered_handlers()) == [], (
        "List the override in hermes_tui/textual_compat.py PRIVATE_HANDLERS (with why), "
        "or override a public method instead"
    )


def test_a_planted_private_override_is_reported():
    from textual.widgets import Markdown, TextArea

    class Planted(TextArea):
        def _on_key(self, event):  # registered: Composer does this
            pass

        def _on_blur(self, event):  # not registered
            pass

    class AlsoPlanted(Markdown):
        def _parse_markdown(self, tokens):
            return []

    found = private_overrides([Planted, AlsoPlanted], _registered_handlers())
    assert [f.split(" overrides ")[0].rsplit(".", 1)[1] for f in found] == [
        "_on_blur",
        "_parse_markdown",
    ]


# -- every dependency capped below its next major version ----------------------------------------


def uncapped(requirements: list[str]) -> list[str]:
    """The requirements without an upper bound (`<` or an exact `==` pin)."""
    return [r for r in requirements if "<" not in r and "==" not in r]


def test_every_dependency_is_capped_below_its_next_major():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    assert uncapped(requirements) == [], "give each an upper bound below its next major"
    assert uncapped(["openai>=3.50", "textual>=8,<9", "x==1.1.0"]) == ["openai>=3.50"]
