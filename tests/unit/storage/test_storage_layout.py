"""storage/'s modules reach each other through public names only."""

from __future__ import annotations

import ast
from pathlib import Path

import storage

PACKAGE = Path(storage.__file__).parent

# Private attributes reached on purpose, and why.
ALLOWED = {
    # aiosqlite has no public way to make its worker thread a daemon (its compat module).
    "aiosqlite_compat.py: pending._thread",
    # The exit drain reaches its own instance through a weak reference.
    "accounting.py: accounting._drain_at_exit",
}


def private_uses(path: Path) -> list[str]:
    """Private names a module imports, or reads off anything but self/cls."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found += [f"{path.name}: import {a.name}" for a in node.names if a.name[0] == "_"]
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}: {ast.unparse(owner)}.{node.attr}")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def test_no_module_reaches_a_private_name_of_another():
    uses = [use for path in sorted(PACKAGE.glob("*.py")) for use in private_uses(path)]
    assert [use for use in uses if use not in ALLOWED] == []
