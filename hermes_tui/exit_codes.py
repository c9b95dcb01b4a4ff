"""The exit codes of `hermes-tui` and `hermes-tui run`: one table, documented as is."""

from __future__ import annotations

OK = 0
ERROR = 1
"""An error the run could not get past (one sentence on stderr), or messages not saved."""
USAGE = 2
"""Bad usage: an unknown option, no task, a `--model` that names no configured model."""
BUDGET = 3
"""The iteration budget was spent before the model finished."""
TRUNCATED = 4
"""The answer was cut off at the output limit."""
SPEND_CAP = 5
"""A call was not sent: it would have passed a spend cap, or its size needed --yes ($2)."""
STOPPED = 130
"""Stopped by Ctrl+C (SIGINT), as a shell reports a process that SIGINT ended."""

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "done"),
    (ERROR, "error (one sentence on stderr), or messages that could not be saved"),
    (USAGE, "bad usage: an unknown option, no task, an unknown `--model`"),
    (BUDGET, "iteration budget spent"),
    (TRUNCATED, "answer cut off at the output limit"),
    (SPEND_CAP, "call not sent: over a spend cap (`budget:`), or its size needs `--yes`"),
    (STOPPED, "stopped (Ctrl+C)"),
)
"""Each code and what it means: docs/headless.md shows this table (a test holds them equal)."""

BY_STATUS = {
    "ok": OK,
    "error": ERROR,
    "budget": BUDGET,
    "truncated": TRUNCATED,
    "capped": SPEND_CAP,
    "stopped": STOPPED,
}
"""A finished turn's status -> the run's exit code."""


class UsageError(Exception):
    """Bad usage found after the arguments parsed (an unknown model, no task): exit 2."""
