"""Every test file has a name of its own: pytest's default import mode imports test files by
basename, so two `test_x.py` in different folders make one of them an error at collection
(seen only when both are collected in one run, as the full suite does)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def test_no_two_test_files_share_a_basename():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    shared = sorted(name for name, count in names.items() if count > 1)
    assert not shared, f"test files sharing a name (rename one): {shared}"
