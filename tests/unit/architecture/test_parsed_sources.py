"""The architecture checks' shared parse never judges a changed file by its old tree."""

from __future__ import annotations

import os

import parsed_sources


def test_a_file_is_parsed_once_and_again_when_it_changes(tmp_path):
    path = tmp_path / "module.py"
    path.write_text("x = 1\n", encoding="utf-8")
    written = path.stat().st_mtime_ns
    first = parsed_sources.tree(path)
    assert parsed_sources.tree(path) is first  # one parse per process while the file stands
    path.write_text("class Planted:\n    pass\n", encoding="utf-8")
    # The same mtime as before (a coarse clock): the size alone still says it changed.
    os.utime(path, ns=(written, written))
    changed = parsed_sources.tree(path)
    assert changed is not first
    assert [type(node).__name__ for node in changed.body] == ["ClassDef"]
    assert parsed_sources.source(path) == "class Planted:\n    pass\n"
