"""H6's second, held without a clock: the waits a stop can sit through add up to under one.

A stop reaches a running tool through an event; what it can still wait for is the tool's
poll step (the longest a look at the stop flag can be away) and, for a process group, the
SIGTERM grace before SIGKILL. Those are constants, so their budget is checked here, where a
loaded machine cannot fail it; the integration tests then prove the stop, not a timeout of
a minute, ended the tool (their wall-clock bounds are wide, so the load cannot fail them).
"""

from __future__ import annotations

import pytest

from agent import web_fetch
from agent.hooks import process as hook_process
from agent.mcp import loop as mcp_loop
from agent.tools import shell

STOP_SECONDS = 1.0
"""H6: every tool stops within a second of a stop."""
POLL_SHARE = 0.1
"""The most of that second one poll step may take (a look at the stop flag every 100 ms)."""


@pytest.mark.parametrize(
    ("where", "step"),
    [
        ("an MCP call's wait (agent/mcp/loop.py)", mcp_loop.POLL_SECONDS),
        ("run_shell's read loop (agent/tools/shell.py)", shell.POLL),
        ("a hook's wait (agent/hooks/process.py)", hook_process.POLL),
        ("web_fetch's watchdog (agent/web_fetch.py)", web_fetch.WATCH_INTERVAL),
    ],
)
def test_h6_each_poll_step_is_a_small_share_of_the_second(where, step):
    """H6: a look at the stop flag is never more than a tenth of a second away."""
    assert 0 < step <= STOP_SECONDS * POLL_SHARE, f"{where} looks at a stop every {step} s"


def test_h6_a_shell_stop_fits_one_poll_and_the_sigterm_grace_in_the_second():
    """H6: a group that ignores SIGTERM is SIGKILLed after the grace, within the second."""
    assert shell.POLL + shell.TERM_GRACE < STOP_SECONDS
