"""One parse of each source file per test process, shared by the architecture checks.

Seven checks scan the same ~260 modules (and two the tests' own files); each parsed them
again, about a second of CPU per pass. A tree is kept per path and is parsed again when the
file's mtime or size changes, so a planted or edited file is never judged by a stale tree.

The trees are shared: a check reads them and never changes them. A check that transforms
a tree works on `copy.deepcopy` of the part it changes (as test_one_home's fingerprints do).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

_PARSED: dict[Path, tuple[tuple[int, int], str, ast.Module]] = {}


def _entry(path: Path) -> tuple[tuple[int, int], str, ast.Module]:
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    held = _PARSED.get(path)
    if held is not None and held[0] == stamp:
        return held
    text = path.read_text(encoding="utf-8")
    entry = (stamp, text, ast.parse(text))
    _PARSED[path] = entry
    return entry


def source(path: Path) -> str:
    """The text of the file at `path`, as last parsed."""
    return _entry(path)[1]


def tree(path: Path) -> ast.Module:
    """The shared (read-only) tree of the file at `path`."""
    return _entry(path)[2]


def python_files(root: Path, packages: Iterable[str]) -> Iterator[Path]:
    """Every `.py` file under `root/package` for each package, in sorted order per package."""
    for package in packages:
        yield from sorted((root / package).rglob("*.py"))
