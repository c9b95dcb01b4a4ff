"""Shared benchmark helpers: an isolated home, timing, and ratio printing."""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path


def isolated_home() -> Path:
    """A fresh HERMES_TUI_HOME so a benchmark never touches the user's sessions."""
    home = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    os.environ["HERMES_TUI_HOME"] = str(home)
    return home


def median(values: list[float]) -> float:
    """The median of a list of timings."""
    return statistics.median(values)


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank) of a list of timings."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def figure(name: str, value: float | int) -> None:
    """Print one `name: value` line the way the issues ask for."""
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    print(f"{name}: {text}", flush=True)
