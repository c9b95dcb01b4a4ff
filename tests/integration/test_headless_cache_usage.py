"""`run --json` reports the prompt cache ($1): each UsageUpdated line carries the call's cache
reads and writes and where its cost came from."""

from __future__ import annotations

import json
import os

from headless_inprocess import run_cli_in_process
from helpers import write_config


def test_json_usage_lines_carry_the_cache_reads_and_writes(servers, hermes_home, tmp_path):
    """$1: the anthropic persona bills the cache; `--json` says what was read and written."""
    from agent.scripted import Script

    script = {
        "replies": [{"text": "ok"}],
        "server": {"persona": "anthropic", "extra": {"cache_min_tokens": 64}},
    }
    server = servers.start(Script.from_dict(script))
    write_config(hermes_home, server, wire="anthropic")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_TUI_HOME"] = str(hermes_home)
    # In this process (tests/headless_inprocess.py): the usage lines are tested, not the process.
    proc = run_cli_in_process(["run", "--json", "hello"], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    usage = [line for line in lines if line["type"] == "UsageUpdated"]
    assert len(usage) == 1
    assert usage[0]["cache_write_tokens"] > 0 and usage[0]["cache_read_tokens"] == 0
    assert usage[0]["total_cache_write_tokens"] == usage[0]["cache_write_tokens"]
    assert usage[0]["cost_source"] is None  # no price for a scripted model
