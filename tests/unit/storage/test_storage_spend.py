"""Spend by day ($2): every accounted delta adds to today's `usage_by_day` row, and a database
from before the table gets its rows from the usage it stored."""

from __future__ import annotations

import sqlite3

import pytest

from storage import SessionDB
from storage.schema import MIGRATIONS


def day_rows(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT day = date('now', 'localtime'), session_id, model, input_tokens,"
            " api_call_count, estimated_cost_usd FROM usage_by_day ORDER BY session_id, model"
        ).fetchall()
    finally:
        conn.close()


async def test_each_delta_counts_on_todays_row_and_absolute_ones_do_not(tmp_path):
    """$2: the day cap's figure is the sum of today's rows, whatever the session."""
    path = tmp_path / "state.db"
    db = await SessionDB.open(path)
    try:
        one = await db.create_session(model="m", provider="p", workspace="ws")
        two = await db.create_session(model="m", provider="p", workspace="ws")
        for session, cost in ((one, 0.25), (one, 0.5), (two, 1.0)):
            db.queue_token_counts(
                session["id"], model="m", provider="p", input_tokens=10, estimated_cost_usd=cost
            )
        # An absolute delta sets a session's totals (an import): no day holds them.
        db.queue_token_counts(two["id"], model="m", provider="p", input_tokens=99, absolute=True)
        assert await db.spent_on_day() == pytest.approx(1.75)
        assert await db.spent_on_day("2000-01-01") == 0.0
    finally:
        await db.close()
    rows = {row[1]: row for row in day_rows(path)}
    assert rows[one["id"]] == (1, one["id"], "m", 20, 2, 0.75)
    assert rows[two["id"]] == (1, two["id"], "m", 10, 1, 1.0)  # the absolute 99 is not in it


async def test_a_version_3_database_gets_its_usage_by_the_day_it_was_last_updated(tmp_path):
    """$2: the usage stored before the day table counts on its session's last day."""
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:3]:
        for statement in migration:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    conn.execute(
        "INSERT INTO sessions (id, model, provider, updated_at) VALUES"
        " ('old', 'm', 'p', unixepoch('now', '-3 days')), ('new', 'm', 'p', unixepoch('now'))"
    )
    conn.execute(
        "INSERT INTO session_model_usage (session_id, model, provider, input_tokens,"
        " api_call_count, estimated_cost_usd) VALUES ('old', 'm', 'p', 5, 1, 2.0),"
        " ('new', 'm', 'p', 7, 2, 0.5)"
    )
    conn.close()
    db = await SessionDB.open(path)
    try:
        assert await db.spent_on_day() == pytest.approx(0.5)
        report = await db.usage_report(days=7)
    finally:
        await db.close()
    assert [(r["input_tokens"], r["cost_usd"]) for r in report] == [(7, 0.5), (5, 2.0)]
