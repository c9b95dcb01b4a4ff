"""Full-text search over every session's messages (the FTS5 index; search_index.py rebuilds it)."""

from __future__ import annotations

import logging
import sqlite3

from .connection import StoreConnection
from .errors import is_busy, is_index_damaged
from .rows import SearchHit

log = logging.getLogger("hermes_tui.storage")

# A subagent's conversation (a child session, G1) is found through its parent, never on its
# own: its messages are left out before the limit, so they take no hit's place. The child
# ids come from the parent_session_id index and each one's messages from the (session_id,
# seq) index, so the set costs what the children hold, not what the store holds.
_NOT_A_CHILD = (
    " AND rowid NOT IN (SELECT c.id FROM messages c WHERE c.session_id IN"
    " (SELECT id FROM sessions WHERE parent_session_id IS NOT NULL))"
)

# Newest hits first: FTS5 walks rowids in descending order and stops at the limit, so a
# common word costs the same as a rare one (ORDER BY rank scores every hit).
_SEARCH = (
    "SELECT m.session_id, s.title, s.updated_at, m.id AS message_id, m.role,"
    " hit.snippet FROM ("
    "   SELECT rowid, snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet"
    "   FROM messages_fts WHERE messages_fts MATCH ?"
    + _NOT_A_CHILD
    + " ORDER BY rowid DESC LIMIT ?"
    " ) AS hit"
    " JOIN messages m ON m.id = hit.rowid"
    " JOIN sessions s ON s.id = m.session_id"
    " ORDER BY m.id DESC"
)


# One hit per session: of the newest SESSION_SCAN matching messages (so a common word still
# costs a bounded scan), each session's best-ranked one (FTS5 rank, bm25: lower is better),
# sessions in the order of their newest match. Snippets are made for the winners alone.
_SESSIONS = (
    "WITH hit AS ("
    "   SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ?"
    + _NOT_A_CHILD
    + "   ORDER BY rowid DESC LIMIT ?"
    " ), ranked AS ("
    "   SELECT m.session_id, m.id AS message_id, m.role,"
    "     ROW_NUMBER() OVER (PARTITION BY m.session_id ORDER BY hit.rank, m.id DESC) AS place,"
    "     MAX(m.id) OVER (PARTITION BY m.session_id) AS newest"
    "   FROM hit JOIN messages m ON m.id = hit.rowid"
    " )"
    " SELECT r.session_id, s.title, s.updated_at, r.message_id, r.role"
    " FROM ranked r JOIN sessions s ON s.id = r.session_id"
    " WHERE r.place = 1 ORDER BY r.newest DESC LIMIT ?"
)
_SNIPPETS = (
    "SELECT rowid, snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet"
    " FROM messages_fts WHERE messages_fts MATCH ? AND rowid IN ({marks})"
)
SESSION_SCAN = 2000
"""How many of the newest matching messages a per-session search ranks."""


def fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: every word a quoted prefix phrase, ANDed.

    Quoting makes FTS5 syntax (AND, *, (, ", :, ^) plain text; doubled quotes escape quotes.
    """
    terms = [word.replace('"', '""') for word in text.split()]
    return " ".join(f'"{term}"*' for term in terms)


async def search_messages(conn: StoreConnection, query: str, limit: int) -> list[SearchHit]:
    """Up to `limit` hits for free text, newest first; a damaged index raises its sentence."""
    match = fts_query(query)
    rows = await _matching(conn, _SEARCH, (match, limit)) if match else []
    return [dict(r) for r in rows]  # type: ignore[misc]


async def search_sessions(conn: StoreConnection, query: str, limit: int) -> list[SearchHit]:
    """Up to `limit` sessions matching free text, each once with its best-ranked message's
    snippet, the session with the newest match first."""
    match = fts_query(query)
    if not match:
        return []
    best = [dict(r) for r in await _matching(conn, _SESSIONS, (match, SESSION_SCAN, limit))]
    if not best:
        return []
    ids = [hit["message_id"] for hit in best]
    sql = _SNIPPETS.format(marks=", ".join("?" * len(ids)))
    snippets = {row[0]: row[1] for row in await _matching(conn, sql, (match, *ids))}
    return [{**hit, "snippet": snippets.get(hit["message_id"], "")} for hit in best]  # type: ignore[typeddict-item]


async def _matching(
    conn: StoreConnection, sql: str, parameters: tuple[object, ...]
) -> list[sqlite3.Row]:
    """The rows of one FTS5 query; a damaged index raises its sentence."""
    conn.check_open()
    try:
        async with conn.execute(sql, parameters) as cur:
            return list(await cur.fetchall())
    except sqlite3.DatabaseError as exc:
        if is_busy(exc) or is_index_damaged(exc) or not isinstance(exc, sqlite3.OperationalError):
            raise conn.translate(exc) from exc
        # Quoting should make every input valid; if FTS5 still objects, no hits is the
        # honest answer for a search box, not a crash.
        log.debug("fts query %r failed: %s", parameters[0], exc)
        return []
