"""Layers that show: agent/ and storage/ never import Textual or the front end (DESIGN 5)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import parsed_sources
import pytest

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = {
    "agent": ("textual", "hermes_tui"),
    "storage": ("textual", "hermes_tui", "agent"),
}


def imported_modules(path: Path) -> set[str]:
    tree = parsed_sources.tree(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_never_imports_the_ui(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in imported_modules(path):
            if name.split(".")[0] in FORBIDDEN[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, offenders


def test_importing_the_core_loads_no_textual():
    code = (
        "import sys, agent.loop, agent.config, agent.demo, storage.db, hermes_tui.headless;"
        "print(any(m.split('.')[0] == 'textual' for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_linter_contracts_are_kept():
    # The contracts live in pyproject.toml ([tool.importlinter]); this runs them in the suite.
    script = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run(
        [str(script), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout
