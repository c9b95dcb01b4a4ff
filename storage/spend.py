"""Spend by local calendar day, read from `usage_by_day` ($2): the day cap and the usage view."""

from __future__ import annotations

from typing import TypedDict

from .connection import StoreConnection


class UsageRow(TypedDict):
    """One day's usage of one model in one project (workspace) across its sessions."""

    day: str
    model: str
    provider: str
    workspace: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    api_calls: int
    cost_usd: float | None
    """None when no call of the group had a price."""


# A row's cost: what the server reported when it did, else what the prices made of it.
_COST = "coalesce(u.actual_cost_usd, u.estimated_cost_usd)"


class Spend:
    """Statements on `usage_by_day`, over the store's connection."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    async def on_day(self, day: str | None = None) -> float:
        """USD spent on `day` (YYYY-MM-DD; default: today, local time) by every session."""
        row = await self._conn.fetchone(
            f"SELECT coalesce(sum({_COST}), 0) FROM usage_by_day u"
            " WHERE u.day = coalesce(?, date('now', 'localtime'))",
            (day,),
        )
        return float(row[0]) if row else 0.0

    async def report(self, days: int, today: str | None = None) -> list[UsageRow]:
        """Usage of the `days` days up to `today` (YYYY-MM-DD; default: today, local time),
        newest first, by project and model; a deleted session's counts under no project."""
        rows = await self._conn.fetchall(
            "SELECT u.day, u.model, u.provider, coalesce(s.workspace, '') AS workspace,"
            " sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens),"
            f" sum(u.cache_write_tokens), sum(u.api_call_count), sum({_COST})"
            " FROM usage_by_day u LEFT JOIN sessions s ON s.id = u.session_id"
            " WHERE u.day > date(coalesce(:today, date('now', 'localtime')), :back)"
            " AND u.day <= coalesce(:today, date('now', 'localtime'))"
            " GROUP BY u.day, u.model, u.provider, workspace"
            " ORDER BY u.day DESC, workspace, u.provider, u.model",
            {"today": today, "back": f"-{int(days)} days"},
        )
        return [
            UsageRow(
                day=r[0],
                model=r[1],
                provider=r[2],
                workspace=r[3],
                input_tokens=int(r[4] or 0),
                output_tokens=int(r[5] or 0),
                cache_read_tokens=int(r[6] or 0),
                cache_write_tokens=int(r[7] or 0),
                api_calls=int(r[8] or 0),
                cost_usd=None if r[9] is None else float(r[9]),
            )
            for r in rows
        ]
