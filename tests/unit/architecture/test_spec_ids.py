"""Every behaviour-contract id is named by at least one test (its docstring or a comment).

The ids come from SPEC.md when it is reachable (next to the repository, in `shared/`, or
where HERMES_TUI_SPEC points), else from tests/spec_ids.txt, the committed copy that a clean
clone checks against. A range such as "T1-T7" names only its two ends: an id in the middle
of it is not shown to be tested by anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
COPY = TESTS / "spec_ids.txt"
SECTIONS = "ARTWKSDCLUHMPXZNG$E"
"""The sections delivered whole so far (every section of the SPEC, since N4 and $2)."""
IDS: tuple[str, ...] = ()
"""The ids delivered so far of a section not yet whole (none now)."""


def _spec_path() -> Path:
    return Path(os.environ.get("HERMES_TUI_SPEC") or ROOT.parent / "shared" / "SPEC.md")


def ids_in_spec(text: str) -> list[str]:
    """The ids delivered (whole sections, and IDS), in SPEC order (each a line `- X1. ...`)."""
    ids = re.findall(r"^- ([A-Z$]\d+)\.", text, flags=re.MULTILINE)
    return [i for i in ids if i[0] in SECTIONS or i in IDS]


def ids_in_copy() -> list[str]:
    """The committed id list (comment lines start with #)."""
    lines = COPY.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def required_ids() -> list[str]:
    """The ids the tests must name: the SPEC's when it is reachable, else the copy's."""
    spec = _spec_path()
    return ids_in_spec(spec.read_text(encoding="utf-8")) if spec.is_file() else ids_in_copy()


def _test_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("test_*.py")))


def test_every_spec_id_is_named_by_a_test():
    text = _test_text()
    unnamed = [
        spec_id
        for spec_id in required_ids()
        if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(spec_id)}(?!\d)", text)
    ]
    assert unnamed == [], "no test names these SPEC ids; tag the tests that prove them"


def test_the_committed_id_list_matches_the_spec():
    spec = _spec_path()
    if not spec.is_file():
        pytest.skip(f"SPEC.md is not reachable here ({spec}); the committed copy stands")
    assert ids_in_copy() == ids_in_spec(spec.read_text(encoding="utf-8")), (
        f"tests/spec_ids.txt is out of date with {spec.name}: copy its ids again"
    )
