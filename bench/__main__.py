"""`python3 -m bench NAME [args]` runs bench/NAME.py's main() and prints its figures."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def available() -> list[str]:
    """The benchmark names: every module in bench/ except this runner and helpers."""
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    """Run one benchmark by name."""
    if not argv or argv[0] not in available():
        print(f"usage: python3 -m bench NAME   (NAME: {', '.join(available())})", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{argv[0]}")
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
