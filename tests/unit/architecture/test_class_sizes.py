"""No god objects: no class in the core or the front end grows past 400 lines (DESIGN 5).

The Agent was split at its seams (agent/turn.py, session_state.py, turn_endings.py, ...);
this keeps it, and every other class, small enough to read in one sitting. A class that
outgrows the bound is split where its ideas part, not given an exception here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import parsed_sources

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("agent", "hermes_tui")
MAX_LINES = 400


def long_classes(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path:Class (N lines)` for each class over MAX_LINES lines."""
    found = []
    for path in parsed_sources.python_files(root, packages):
        for node in ast.walk(parsed_sources.tree(path)):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    rel = path.relative_to(root)
                    found.append(f"{rel}:{node.name} ({lines} lines)")
    return found


def test_no_class_is_over_400_lines():
    """A class over the bound is named with its size."""
    assert long_classes(ROOT) == []


def test_the_check_finds_a_planted_long_class(tmp_path):
    """The scan itself bites: a planted 401-line class is reported."""
    package = tmp_path / "agent"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (package / "big.py").write_text(f"class Big:\n{body}\n", encoding="utf-8")
    assert long_classes(tmp_path, ("agent",)) == ["agent/big.py:Big (401 lines)"]
