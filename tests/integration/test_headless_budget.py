"""Spend caps headless ($2): `hermes-tui run` exits with its documented code and says the
cap's sentence on stderr; the call is never sent; a large request needs `--yes`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from helpers import write_config
from test_budget_caps import PRICING, answer, seed_day, tool_round

from agent.scripted import Script
from hermes_tui import exit_codes
from storage.db import SessionDB


def run(home, cwd, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui", "run", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def serve(servers, home, replies, budget):
    server = servers.start(Script.from_dict({"replies": replies}))
    provider = {"pricing": PRICING, "context_window": 1_000_000}
    write_config(home, server, provider=provider, budget=budget, sandbox="off")
    return server


def hermes_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("hermes-tui:")]


def test_the_turn_cap_ends_a_headless_run_with_its_code_and_sentence(
    servers, hermes_home, tmp_path
):
    """$2: the call after a $1.00 tool round would pass the $1.20 turn cap: not sent."""
    server = serve(servers, hermes_home, [tool_round(), answer()], {"turn": 1.2})
    proc = run(hermes_home, tmp_path, "--yes", "list the files")
    assert proc.returncode == exit_codes.SPEND_CAP, proc.stderr
    assert len(server.requests) == 1
    lines = hermes_lines(proc.stderr)
    assert lines == [
        # The 80 % warning after the first call, then the stop, each once.
        "hermes-tui: Spent $1.00 of the turn cap of $1.20 (83 %); a call that would pass it "
        "is not sent.",
        lines[1],
    ]
    assert lines[1].startswith("hermes-tui: Stopped: this call (~$1.0")
    assert "would pass the turn cap of $1.20 (spent $1.00)" in lines[1]
    assert "Traceback" not in proc.stderr


def test_the_day_cap_reads_todays_spend_from_the_database(servers, hermes_home, tmp_path):
    """$2: $5.00 spent today by another session leaves no room under a $5.00 day cap."""

    async def migrate() -> None:
        db = await SessionDB.open(hermes_home / "state.db")
        await db.close()

    asyncio.run(migrate())
    seed_day(hermes_home, 5.0)
    server = serve(servers, hermes_home, [answer()], {"day": 5.0})
    proc = run(hermes_home, tmp_path, "hello")
    assert proc.returncode == exit_codes.SPEND_CAP, proc.stderr
    assert server.requests == []
    assert "would pass the day cap of $5.00 (spent $5.00)" in proc.stderr


def test_a_large_request_is_refused_headless_unless_yes(servers, hermes_home, tmp_path):
    """$2: without --yes a request over `budget.ask_above_tokens` is not sent."""
    server = serve(servers, hermes_home, [answer("read")], {"ask_above_tokens": 1_000})
    task = "summarise " + "log line\n" * 1_000
    refused = run(hermes_home, tmp_path, task)
    assert refused.returncode == exit_codes.SPEND_CAP, refused.stderr
    assert server.requests == []
    (line,) = hermes_lines(refused.stderr)
    assert line.startswith("hermes-tui: Not sent: the request is ")
    assert "(headless: --yes sends it)" in line
    sent = run(hermes_home, tmp_path, "--yes", task)
    assert sent.returncode == exit_codes.OK, sent.stderr
    assert len(server.requests) == 1  # the same request, sent this time
