"""Token accounting: the caller's cost of the synchronous apply vs. the queued call, and how
many UPDATE statements a backlog of same-route deltas costs (SPEC S2, S3)."""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import threading
import time

from bench._common import figure, isolated_home, median, p95


def _prepare(path, sessions: int) -> list[str]:
    """A WAL database with some history, so the synchronous path touches a real file."""
    from storage.db import SessionDB

    async def make() -> list[str]:
        db = await SessionDB.open(path)
        await db.close()
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN")
        ids = [f"s{i:05d}" for i in range(sessions)]
        conn.executemany(
            "INSERT INTO sessions (id, model, provider, created_at, updated_at)"
            " VALUES (?, 'm', 'p', 0, 0)",
            [(sid,) for sid in ids],
        )
        conn.executemany(
            "INSERT INTO messages (session_id, seq, role, content) VALUES (?, ?, 'user', ?)",
            [(sid, n, f"message {n} of {sid} " * 8) for sid in ids for n in range(1, 21)],
        )
        conn.execute("COMMIT")
        conn.close()
        return ids

    return asyncio.run(make())


def main(argv: list[str]) -> int:
    """Print accounting.sync_over_queued_p95 and accounting.updates_per_1000_backlogged."""
    parser = argparse.ArgumentParser(prog="python3 -m bench accounting")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=500)
    args = parser.parse_args(argv)
    from storage.accounting import TokenAccounting

    path = isolated_home() / "state.db"
    ids = _prepare(path, args.sessions)
    sid = ids[len(ids) // 2]
    usage = dict(
        model="m", provider="p", route="https://api.example/v1", input_tokens=1200,
        output_tokens=300, cache_read_tokens=800, reasoning_tokens=50, estimated_cost_usd=0.0125,
    )  # fmt: skip

    sync = TokenAccounting(path)
    queued = TokenAccounting(path)
    for _ in range(50):  # warm both paths
        sync.update_token_counts(sid, **usage)
        queued.queue_token_counts(sid, **usage)
    queued.flush_token_counts()
    sync_times, queued_times = [], []
    clock = time.perf_counter
    for _ in range(args.calls):  # interleaved, so machine noise hits both sides alike
        start = clock()
        sync.update_token_counts(sid, **usage)
        sync_times.append(clock() - start)
        start = clock()
        queued.queue_token_counts(sid, **usage)
        queued_times.append(clock() - start)
        # Untimed: the writer goes back to sleep (each queued call pays a full wake-up) and
        # never contends with the next synchronous apply for the write lock.
        queued.flush_token_counts()
    queued.flush_token_counts()
    sync.close()
    queued.close()

    # A backlog: another connection holds the write lock while 1,000 deltas are queued.
    backlog = TokenAccounting(path, lock_timeout=30)
    backlog.update_token_counts(sid, **usage)  # open the connection, then trace it
    updates = 0

    def trace(sql: str) -> None:
        nonlocal updates
        head = sql.lstrip()[:40].upper()
        # The usage upsert updates a row too: count it as an UPDATE.
        updates += head.startswith("UPDATE") or head.startswith("INSERT INTO SESSION_MODEL")

    backlog.set_trace_callback(trace)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    for _ in range(1000):
        backlog.queue_token_counts(sid, **usage)
    holder.execute("COMMIT")
    holder.close()
    backlog.flush_token_counts()
    backlog.close()
    conn = sqlite3.connect(path)
    calls = conn.execute("SELECT api_call_count FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
    conn.close()
    assert calls == 50 * 2 + args.calls * 2 + 1 + 1000, calls

    figure("accounting.sync_p95_us", p95(sync_times) * 1e6)
    figure("accounting.queued_p95_us", p95(queued_times) * 1e6)
    figure("accounting.sync_p50_us", median(sync_times) * 1e6)
    figure("accounting.queued_p50_us", median(queued_times) * 1e6)
    figure("accounting.sync_over_queued_p95", p95(sync_times) / p95(queued_times))
    figure("accounting.updates_per_1000_backlogged", updates)
    threading.enumerate()  # nothing to join: both writers were closed
    return 0
