"""Full-text search over a large store: p95 latency of SessionDB.search (SPEC S1, issue 6)."""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import time

from bench._common import figure, isolated_home, median, p95

_WORDS = [
    f"{stem}{suffix}"
    for stem in ("parse", "render", "config", "socket", "thread", "cache", "token", "schema",
                 "widget", "stream", "commit", "branch", "python", "sqlite", "layout", "theme",
                 "retry", "buffer", "module", "import")
    for suffix in ("", "r", "s", "ing", "ed", "able", "ation", "ize", "ly", "ness")
]  # fmt: skip


def _fill(path, sessions: int, messages: int, rng: random.Random) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO sessions (id, title, model, provider, created_at, updated_at)"
        " VALUES (?, ?, 'm', 'p', ?, ?)",
        [(f"s{i:06d}", f"session {i}", i, i) for i in range(sessions)],
    )
    per = messages // sessions
    roles = ("user", "assistant", "tool")

    def rows():
        for i in range(sessions):
            for n in range(1, per + 1):
                text = " ".join(rng.choices(_WORDS, k=rng.randint(8, 40)))
                yield (f"s{i:06d}", n, roles[n % 3], text, i)

    conn.executemany(
        "INSERT INTO messages (session_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
        rows(),
    )
    conn.execute("COMMIT")
    conn.close()


def main(argv: list[str]) -> int:
    """Print search.p95_ms over --sessions sessions and --messages messages."""
    parser = argparse.ArgumentParser(prog="python3 -m bench search")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    from storage.db import SessionDB

    rng = random.Random(6)
    path = isolated_home() / "state.db"

    async def run() -> list[float]:
        db = await SessionDB.open(path)
        await db.close()
        started = time.perf_counter()
        _fill(path, args.sessions, args.messages, rng)
        figure("search.fill_s", time.perf_counter() - started)
        db = await SessionDB.open(path)
        times = []
        try:
            for q in range(args.queries + 10):
                words = rng.sample(_WORDS, rng.choice((1, 1, 2)))
                query = " ".join(w[: rng.randint(4, len(w))] for w in words)
                start = time.perf_counter()
                hits = await db.search(query, limit=50)
                if q >= 10:  # the first few warm the page cache
                    times.append(time.perf_counter() - start)
                assert all("snippet" in h for h in hits)
        finally:
            await db.close()
        return times

    times = asyncio.run(run())
    figure("search.p50_ms", median(times) * 1000)
    figure("search.p95_ms", p95(times) * 1000)
    return 0
