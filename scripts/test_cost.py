"""What a test run cost, read from its junit XML: tests, worker-seconds, the dearest files.

Usage: python3 -m pytest --junitxml=run.xml && python3 scripts/test_cost.py run.xml [--top N]

Worker-seconds are the sum of every test's own time as pytest reports it (its setup, call
and teardown), whichever worker ran it: what the suite asks of the machine, independent of
how many workers shared it. Compare runs made in the same load state.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    """One test case: its file, its name and the seconds it took."""

    file: str
    name: str
    seconds: float


def cases(report: Path) -> list[Case]:
    """Every test case the junit report records (skipped ones included, at their cost)."""
    found = []
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "")
        # "tests.ui.test_x" or "tests.ui.test_x.TestClass": the file is the test_ module.
        parts = module.split(".")
        cut = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
        file = "/".join(parts[: cut + 1]) + ".py"
        found.append(Case(file, case.get("name", "?"), float(case.get("time") or 0.0)))
    return found


def summary(found: list[Case], top: int) -> str:
    """The run's totals, then the `top` dearest files and tests."""
    total = sum(case.seconds for case in found)
    lines = [
        f"tests: {len(found)}",
        f"worker-seconds: {total:.1f}",
        f"per test: {total / max(1, len(found)):.3f} s",
        "",
        f"the {top} dearest files (worker-s, tests, per test):",
    ]
    by_file: dict[str, list[float]] = defaultdict(list)
    for case in found:
        by_file[case.file].append(case.seconds)
    ranked = sorted(by_file.items(), key=lambda item: -sum(item[1]))[:top]
    for file, times in ranked:
        spent = sum(times)
        lines.append(f"  {spent:8.1f}  {len(times):4d}  {spent / len(times):6.2f}  {file}")
    lines += ["", f"the {top} dearest tests (s):"]
    for case in sorted(found, key=lambda c: -c.seconds)[:top]:
        lines.append(f"  {case.seconds:8.2f}  {case.file}::{case.name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the cost summary of one junit report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a junit XML file pytest wrote")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    try:
        found = cases(args.report)
    except (OSError, ET.ParseError) as error:
        print(f"cannot read {args.report}: {error}", file=sys.stderr)
        return 2
    print(summary(found, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
