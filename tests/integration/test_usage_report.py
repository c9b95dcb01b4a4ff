"""`hermes-tui usage` ($2): spend and tokens by day, model and project from the database,
with what the cache saved where the prices are known; `--json` one object a row."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import yaml

from hermes_tui import cli, exit_codes
from storage.db import SessionDB

CONFIG = {
    "model": "scripted:test-model",
    "providers": {
        "scripted": {
            "kind": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": "sk-test-key-123456",
            # $100 a million input tokens, $10 a million read from the cache.
            "pricing": {"test-model": {"input": 100.0, "output": 100.0, "cache_read": 10.0}},
        }
    },
}


def seed(home, projects) -> None:
    """Two projects today (one model priced, one not), and one call yesterday."""

    async def write() -> None:
        db = await SessionDB.open(home / "state.db")
        try:
            alpha = await db.create_session(
                model="m", provider="p", workspace=str(projects / "alpha")
            )
            beta = await db.create_session(
                model="m", provider="p", workspace=str(projects / "beta")
            )
            db.accounting.update_token_counts(
                alpha["id"], model="test-model", provider="scripted", input_tokens=10_000,
                output_tokens=1_000, cache_read_tokens=4_000, estimated_cost_usd=1.1,
            )  # fmt: skip
            db.accounting.update_token_counts(
                beta["id"], model="big", provider="gone", input_tokens=2_000
            )
        finally:
            await db.close()

    asyncio.run(write())
    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute(
            "INSERT INTO usage_by_day (day, session_id, model, provider, input_tokens,"
            " api_call_count, estimated_cost_usd)"
            " VALUES (date('now', 'localtime', '-1 day'), 'deleted', 'test-model', 'scripted',"
            " 500, 1, 0.05)"
        )
    conn.close()


def today(offset: int = 0) -> str:
    conn = sqlite3.connect(":memory:")
    try:
        return conn.execute("SELECT date('now', 'localtime', ?)", (f"{offset} days",)).fetchone()[0]
    finally:
        conn.close()


def test_usage_prints_a_table_by_day_model_and_project(hermes_home, tmp_path, capsys):
    """$2: newest day first; the saving is cache reads at input less cache-read price."""
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    seed(hermes_home, tmp_path)
    assert cli.main(["usage"]) == exit_codes.OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "day", "project", "model", "calls", "in", "out", "cache", "read", "cost", "saved"
    ]  # fmt: skip
    rows = [line.split() for line in out[1:]]
    assert rows == [
        [today(), str(tmp_path / "alpha"), "scripted:test-model", "1", "10,000", "1,000", "4,000",
         "$1.1000", "$0.3600"],
        [today(), str(tmp_path / "beta"), "gone:big", "1", "2,000", "0", "0", "–", "–"],
        [today(-1), "(deleted", "session)", "scripted:test-model", "1", "500", "0", "0",
         "$0.0500", "$0.0000"],
        ["total", "3", "12,500", "1,000", "4,000", "$1.1500", "$0.3600"],
    ]  # fmt: skip


def test_usage_json_and_a_bad_days_count(hermes_home, tmp_path, capsys):
    """$2: `--json` gives one object a row; `--days 0` is bad usage, in one sentence."""
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    seed(hermes_home, tmp_path)
    assert cli.main(["usage", "--json", "--days", "1"]) == exit_codes.OK
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["project"], r["model"], r["saved_usd"]) for r in rows] == [
        (str(tmp_path / "alpha"), "scripted:test-model", 0.36),
        (str(tmp_path / "beta"), "gone:big", None),
    ]
    assert cli.main(["usage", "--days", "0"]) == exit_codes.USAGE
    assert capsys.readouterr().err == "hermes-tui: --days must be 1 or more, not 0.\n"
