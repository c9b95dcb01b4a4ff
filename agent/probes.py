"""The named points where tests and benchmarks watch or hold a turn (no-ops by default).

The front end has its own `Probes` (hermes_tui/probes.py) for clocks and counters; these
are the agent's: a turn calls each at one fixed moment on its worker thread, so a test can
hold the turn there (a barrier) or act at exactly that point (a late steer before the seal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _nothing() -> None:
    return None


@dataclass
class AgentProbes:
    """Callables a turn runs at named moments; replace one to watch or hold the turn there."""

    before_model_call: Callable[[], None] = _nothing
    """After the turn's writes are flushed and before compaction and the model call."""
    after_tool_batch: Callable[[], None] = _nothing
    """After a batch of tool calls has run and been kept."""
    before_seal: Callable[[], None] = _nothing
    """After the turn's last writes, before its steer generation is sealed and drained."""
