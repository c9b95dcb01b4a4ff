"""Typed seams, narrow doors: the core and the whole front end are checked strictly, CI
runs the check, and no controller takes the whole app (#28 item 4).

`.ci/run` runs `python3 -m mypy`, which checks pyproject's `[tool.mypy] files`; that passes
vacuously if `strict` is dropped or a module leaves the list, so planted untyped modules
must fail under the project's own configuration. A controller (a class built with
the app, or a function handed it) takes a Protocol of the parts it uses, and its module is
in the checked list, so the check proves HermesApp passes that door where it is built.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import parsed_sources
import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[3]

PLANTED = "def untyped(x, rows: dict):\n    return x\n"

PACKAGES = ("storage", "agent", "hermes_tui")
"""Ours: every module of each is checked strictly (pyproject's [tool.mypy] files)."""

SEAMS = ("hermes_tui/app.py", "hermes_tui/runtime.py", "hermes_tui/commands/context.py")
"""Where the agent, the store and the runtime are held: never typed Any."""

WHOLE_APP_ALLOWED = {"hermes_tui/app.py", "hermes_tui/actions.py"}
"""The app itself, and its key actions (a mixin of HermesApp, typed on it)."""


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def covered(path: str, files: list[str]) -> bool:
    """True when `path` is checked: it, or a folder it is in, is in `files`."""
    return any(path == entry or path.startswith(entry.rstrip("/") + "/") for entry in files)


def takers_of_the_app(source: str) -> list[tuple[str, str]]:
    """(name, annotation) of every function or method in `source` with a parameter `app`,
    the doors controllers are built from (`__init__(self, app: Door)`, `greet(app: Door)`)."""
    return _takers(ast.parse(source))


def _takers(tree: ast.Module) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg in node.args.args:
                if arg.arg == "app":
                    shown = ast.unparse(arg.annotation) if arg.annotation else ""
                    found.append((node.name, shown))
    return found


NOT_A_DOOR = ("App", "App[Any]", "Any", "object")
"""Textual's App (its generic services: a helper, not a controller), or no type at all."""


def _controllers() -> dict[str, list[tuple[str, str]]]:
    """The modules whose functions take the app through a door of ours (or HermesApp)."""
    out = {}
    for path in sorted((ROOT / "hermes_tui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("hermes_tui/widgets/") or rel.startswith("hermes_tui/screens/"):
            continue  # widgets and screens reach the app through Textual, not a parameter
        takers = _takers(parsed_sources.tree(path))
        takers = [(name, shown) for name, shown in takers if shown not in NOT_A_DOOR]
        if takers:
            out[rel] = takers
    return out


def test_pyproject_checks_the_core_and_the_front_ends_seams_strictly():
    config = _mypy_config()
    assert config.get("strict") is True, "pyproject.toml: [tool.mypy] must set strict = true"
    files = config["files"]
    missing = [path for path in ("storage", "agent", *SEAMS) if not covered(path, files)]
    assert not missing, f"[tool.mypy] files: {sorted(files)} leave out {missing}"
    # A module checked but left unreported (an override: follow_imports silent, ignore_errors,
    # strictness off) would pass vacuously: overrides are for other people's packages only.
    assert not overridden(config.get("overrides", [])), "an override names our own modules"


def unchecked(files: list[str]) -> list[str]:
    """Every module of our packages that `files` leaves out of the check."""
    return [path for path in _modules() if not covered(path, files)]


def _modules() -> list[str]:
    found = (path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))
    return sorted(path.relative_to(ROOT).as_posix() for path in found)


def overridden(overrides: list[dict]) -> list[str]:
    """The modules of our packages an override section names (its settings apply to them)."""
    named = []
    for override in overrides:
        modules = override.get("module", [])
        for module in [modules] if isinstance(modules, str) else modules:
            if str(module).split(".")[0] in PACKAGES:
                named.append(str(module))
    return named


def test_every_module_of_the_packages_is_checked():
    """The whole front end is checked, as the core is: a module falling out fails here."""
    missing = unchecked(_mypy_config()["files"])
    assert not missing, f"add to [tool.mypy] files in pyproject.toml: {missing}"


def test_the_finders_see_a_module_left_out_and_an_override_of_ours():
    files = ["storage", "agent", "hermes_tui/app.py", "hermes_tui/commands"]
    left_out = unchecked(files)
    assert "hermes_tui/widgets/composer.py" in left_out and "hermes_tui/keys.py" in left_out
    assert not [path for path in left_out if path.startswith(("storage/", "agent/"))]
    assert "hermes_tui/commands/session.py" not in left_out
    planted = [
        {"module": ["re2"], "ignore_missing_imports": True},
        {"module": ["hermes_tui.*"], "follow_imports": "silent"},
        {"module": "agent.loop", "ignore_errors": True},
    ]
    assert overridden(planted) == ["hermes_tui.*", "agent.loop"]


def test_ci_type_checks_the_configured_files_before_the_tests():
    lines = [line.split("#")[0].strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    # No paths on the line: it checks pyproject's `files` (a path given would replace them).
    assert "python3 -m mypy" in lines
    assert lines.index("python3 -m mypy") < lines.index("python3 -m pytest")


@pytest.mark.parametrize("package", PACKAGES)
def test_a_planted_untyped_module_fails_the_check(tmp_path, package):
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "planted.py").write_text(PLANTED)
    config = str(ROOT / "pyproject.toml")
    cache = str(tmp_path / "cache")
    out, _err, status = api.run(
        ["--config-file", config, "--cache-dir", cache, str(folder / "planted.py")]
    )
    assert status == 1, out
    assert "[no-untyped-def]" in out and "[type-arg]" in out, out


def test_no_controller_takes_the_whole_app():
    wide = {
        path: takers
        for path, takers in _controllers().items()
        if path not in WHOLE_APP_ALLOWED and any("HermesApp" in shown for _, shown in takers)
    }
    assert not wide, f"give these a Protocol of what they use (a door), not HermesApp: {wide}"


def test_every_controller_is_in_the_checked_files():
    """Its door is proven only where mypy checks it: the module and app.py, which builds it."""
    files = _mypy_config()["files"]
    unchecked = sorted(path for path in _controllers() if not covered(path, files))
    assert not unchecked, f"add to [tool.mypy] files in pyproject.toml: {unchecked}"


def test_the_finder_sees_a_planted_controller_taking_the_app():
    planted = (
        "class Planted:\n    def __init__(self, app: HermesApp) -> None:\n        self.app = app\n"
    )
    assert takers_of_the_app(planted) == [("__init__", "HermesApp")]


@pytest.mark.parametrize("path", SEAMS)
def test_the_agent_the_store_and_the_runtime_are_not_typed_any(path):
    tree = parsed_sources.tree(ROOT / path)
    typed = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            target = node.target
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in ("agent", "db", "runtime"):
                typed[name] = ast.unparse(node.annotation)
    assert typed, f"{path} declares none of agent, db, runtime"
    loose = {name: shown for name, shown in typed.items() if "Any" in shown}
    assert not loose, f"{path}: {loose}"
