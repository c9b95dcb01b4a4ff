"""storage/ is type-checked strictly, and CI runs the check (#28 item 4).

`.ci/run` runs `python3 -m mypy storage`; that passes vacuously if pyproject.toml stops
applying `strict` to `storage.*`, so a planted untyped module must fail under the project's
own configuration.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[3]

PLANTED = "def untyped(x, rows: dict):\n    return x\n"


def test_pyproject_applies_strict_to_storage():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    overrides = config["tool"]["mypy"]["overrides"]
    strict = [o for o in overrides if "storage.*" in o["module"] and o.get("strict") is True]
    assert strict, "pyproject.toml: [[tool.mypy.overrides]] must set strict = true on storage.*"


def test_ci_type_checks_storage_before_the_tests():
    lines = [line.split("#")[0].strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert "python3 -m mypy storage" in lines
    assert lines.index("python3 -m mypy storage") < lines.index("python3 -m pytest")


def test_a_planted_untyped_storage_module_fails_the_check(tmp_path):
    package = tmp_path / "storage"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "planted.py").write_text(PLANTED)
    config = str(ROOT / "pyproject.toml")
    cache = str(tmp_path / "cache")
    out, _err, status = api.run(
        ["--config-file", config, "--cache-dir", cache, str(package / "planted.py")]
    )
    assert status == 1, out
    assert "[no-untyped-def]" in out and "[type-arg]" in out, out
