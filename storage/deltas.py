"""Token/cost deltas, their merge rules and the SQL that applies them (SPEC S2, S3).

A delta is what one model call adds to a session's totals and to its (model, provider,
route) row in `session_model_usage`. Under a backlog, adjacent incremental deltas of the same
session and route merge into one apply: token and call counts sum; costs sum
None-preservingly (all None stays None, so the stored value is kept). `absolute=True` deltas
never merge and are barriers. A merged apply leaves exactly the rows sequential applies
would (a property test holds `coalesce` and `apply_delta` to that). No threads and no
queue here: those are accounting.py's.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

from .errors import StorageError, UnknownSessionError, translate
from .schema import USAGE_COUNTERS

log = logging.getLogger("hermes_tui.storage")

_COSTS = ("estimated_cost_usd", "actual_cost_usd")


@final  # never subclassed: as_delta tells a Delta by its exact type
@dataclass(slots=True)
class Delta:
    """One token/cost delta for one session and route; `absolute` sets instead of adds."""

    session_id: str
    model: str
    provider: str
    route: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    api_calls: int = 1
    estimated_cost_usd: float | None = None
    actual_cost_usd: float | None = None
    absolute: bool = False
    estimated_calls: int = 0
    """Of `api_calls`, those whose counts are estimates (no usage came from the server)."""

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The attribution key: session and route. Only equal keys may merge."""
        return (self.session_id, self.model, self.provider, self.route)


def make_delta(
    session_id: str,
    *,
    model: str,
    provider: str,
    route: str | None = "",
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    api_calls: int = 1,
    estimated_cost_usd: float | None = None,
    actual_cost_usd: float | None = None,
    absolute: bool = False,
    estimated_calls: int = 0,
) -> Delta:
    """Validate and normalise the arguments of update/queue_token_counts into a Delta."""
    if not session_id:
        raise ValueError("a token delta needs a session id")
    return Delta(
        str(session_id),
        model or "",
        provider or "",
        route or "",
        int(input_tokens or 0),
        int(output_tokens or 0),
        int(cache_read_tokens or 0),
        int(cache_write_tokens or 0),
        int(reasoning_tokens or 0),
        int(api_calls or 0),
        None if estimated_cost_usd is None else float(estimated_cost_usd),
        None if actual_cost_usd is None else float(actual_cost_usd),
        bool(absolute),
        int(estimated_calls or 0),
    )


# queue_token_counts checks on the caller only what is cheap: a session id and the keyword
# names (the TypeError make_delta would raise). The values are normalised by make_delta on
# the writer thread.
DELTA_FIELDS = frozenset(Delta.__slots__) - {"session_id"}
"""The keyword arguments of update/queue_token_counts."""
REQUIRED_FIELDS = frozenset({"model", "provider"})
"""The keywords every delta must name."""


def as_delta(item: Delta | tuple[str, dict[str, Any]]) -> Delta:
    """A queued item as a Delta: either one already, or raw (session_id, fields)."""
    if type(item) is Delta:
        return item
    session_id, fields = item
    return make_delta(session_id, **fields)


def normalise(batch: Iterable[Delta | tuple[str, dict[str, Any]]]) -> list[Delta]:
    """Queued items as Deltas; one whose values make_delta cannot convert is logged and dropped."""
    deltas = []
    for item in batch:
        try:
            deltas.append(as_delta(item))
        except (TypeError, ValueError, OverflowError):
            log.exception("token accounting: dropped a delta with bad values %r", item)
    return deltas


def sum_costs(a: float | None, b: float | None) -> float | None:
    """None-preserving sum: None + None is None (keep the stored value), else None counts 0."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def can_merge(a: Delta, b: Delta) -> bool:
    """Two adjacent deltas merge only when both are incremental and their keys are equal."""
    return not a.absolute and not b.absolute and a.key == b.key


def merge(a: Delta, b: Delta) -> Delta:
    """The one delta whose apply equals applying a, then b (requires can_merge(a, b))."""
    return replace(
        a,
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
        api_calls=a.api_calls + b.api_calls,
        estimated_calls=a.estimated_calls + b.estimated_calls,
        estimated_cost_usd=sum_costs(a.estimated_cost_usd, b.estimated_cost_usd),
        actual_cost_usd=sum_costs(a.actual_cost_usd, b.actual_cost_usd),
    )


def coalesce(deltas: Iterable[Delta]) -> list[Delta]:
    """Merge runs of adjacent mergeable deltas, keeping order; absolute deltas stand alone."""
    out: list[Delta] = []
    for delta in deltas:
        if out and can_merge(out[-1], delta):
            out[-1] = merge(out[-1], delta)
        else:
            out.append(delta)
    return out


# ---------------------------------------------------------------------------------- SQL
# pragma: no mutate start (SQL text: keywords and names are case-blind, so changing their
# case changes nothing, and any other change to the text breaks every apply)
_COUNTER_ASSIGN = ", ".join(f"{c} = {c} + :{c}" for c in USAGE_COUNTERS)
_COUNTER_SET = ", ".join(f"{c} = :{c}" for c in USAGE_COUNTERS)
# A None cost delta keeps the stored value; a number adds to it (a stored NULL counts as 0).
_COST_ADD = ", ".join(
    f"{c} = CASE WHEN :{c} IS NULL THEN {c} ELSE coalesce({c}, 0) + :{c} END" for c in _COSTS
)
_COST_SET = ", ".join(f"{c} = coalesce(:{c}, {c})" for c in _COSTS)
# The first accounted call (api_call_count still 0) says which model and provider actually
# served the session: it backfills them. This is why a delta queued before a model switch
# must be applied before the switch is written (S5): applied after it, it would put the
# previous model back.
_BACKFILL = (
    "model = CASE WHEN api_call_count = 0 OR coalesce(model, '') = '' THEN :model ELSE model END,"
    " provider = CASE WHEN api_call_count = 0 OR coalesce(provider, '') = ''"
    " THEN :provider ELSE provider END"
)

SESSION_ADD_SQL = (
    f"UPDATE sessions SET {_BACKFILL}, {_COUNTER_ASSIGN},"
    f" api_call_count = api_call_count + :api_calls, {_COST_ADD} WHERE id = :session_id"
)
SESSION_SET_SQL = (
    f"UPDATE sessions SET {_BACKFILL}, {_COUNTER_SET}, api_call_count = :api_calls,"
    f" {_COST_SET} WHERE id = :session_id"
)
_USAGE_INSERT = (
    "INSERT INTO session_model_usage (session_id, model, provider, route,"
    f" {', '.join(USAGE_COUNTERS)}, api_call_count, estimated_cost_usd, actual_cost_usd)"
    " VALUES (:session_id, :model, :provider, :route,"
    f" {', '.join(':' + c for c in USAGE_COUNTERS)}, :api_calls,"
    " :estimated_cost_usd, :actual_cost_usd)"
    " ON CONFLICT (session_id, model, provider, route) DO UPDATE SET "
)
USAGE_ADD_SQL = _USAGE_INSERT + ", ".join(
    [f"{c} = {c} + excluded.{c}" for c in USAGE_COUNTERS]
    + ["api_call_count = api_call_count + excluded.api_call_count"]
    + [
        f"{c} = CASE WHEN excluded.{c} IS NULL THEN {c} ELSE coalesce({c}, 0) + excluded.{c} END"
        for c in _COSTS
    ]
)
USAGE_SET_SQL = _USAGE_INSERT + ", ".join(
    [f"{c} = excluded.{c}" for c in USAGE_COUNTERS]
    + ["api_call_count = excluded.api_call_count"]
    + [f"{c} = coalesce(excluded.{c}, {c})" for c in _COSTS]
)
# An incremental delta also counts on today's row of `usage_by_day` (the local calendar day
# when it is applied, $2); an absolute one sets totals, which no single day holds.
DAY_ADD_SQL = (
    _USAGE_INSERT.replace("session_model_usage (session_id", "usage_by_day (day, session_id")
    .replace("VALUES (:session_id", "VALUES (date('now', 'localtime'), :session_id")
    .replace("ON CONFLICT (session_id", "ON CONFLICT (day, session_id")
) + USAGE_ADD_SQL[len(_USAGE_INSERT) :]
# pragma: no mutate end


def _params(delta: Delta) -> dict[str, Any]:
    return {
        "session_id": delta.session_id,
        "model": delta.model,
        "provider": delta.provider,
        "route": delta.route,
        "input_tokens": delta.input_tokens,
        "output_tokens": delta.output_tokens,
        "cache_read_tokens": delta.cache_read_tokens,
        "cache_write_tokens": delta.cache_write_tokens,
        "reasoning_tokens": delta.reasoning_tokens,
        "estimated_calls": delta.estimated_calls,
        "api_calls": delta.api_calls,
        "estimated_cost_usd": delta.estimated_cost_usd,
        "actual_cost_usd": delta.actual_cost_usd,
    }


def apply_delta(conn: sqlite3.Connection, delta: Delta) -> None:
    """Apply one delta inside the caller's open transaction: the sessions row, then usage."""
    params = _params(delta)
    cur = conn.execute(SESSION_SET_SQL if delta.absolute else SESSION_ADD_SQL, params)
    if cur.rowcount == 0:
        raise UnknownSessionError(delta.session_id)
    conn.execute(USAGE_SET_SQL if delta.absolute else USAGE_ADD_SQL, params)
    if not delta.absolute:
        conn.execute(DAY_ADD_SQL, params)


# SQL keywords and savepoint names are case-blind, so these texts are not mutated.
_SAVEPOINT = "SAVEPOINT delta"  # pragma: no mutate
_ROLLBACK_TO_SAVEPOINT = "ROLLBACK TO delta"  # pragma: no mutate
_RELEASE_SAVEPOINT = "RELEASE delta"  # pragma: no mutate


def apply_in_transaction(
    conn: sqlite3.Connection, deltas: list[Delta], path: Path
) -> list[tuple[Delta, StorageError]]:
    """Apply deltas inside the open BEGIN IMMEDIATE transaction, one SAVEPOINT each; commit.

    Returns the deltas that failed on their own (e.g. an unknown session), which are
    dropped. When the whole transaction fails it is rolled back and the StorageError raised.
    """
    failed: list[tuple[Delta, StorageError]] = []
    try:
        for delta in deltas:
            conn.execute(_SAVEPOINT)
            try:
                apply_delta(conn, delta)
            except (sqlite3.Error, StorageError) as exc:
                if not conn.in_transaction:
                    raise
                conn.execute(_ROLLBACK_TO_SAVEPOINT)
                failed.append((delta, translate(exc, path)))
            conn.execute(_RELEASE_SAVEPOINT)
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                log.debug("rollback failed", exc_info=True)
        if isinstance(exc, sqlite3.Error):
            raise translate(exc, path) from exc
        raise
    return failed
