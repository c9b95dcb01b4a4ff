"""Full-text search over every session's messages (the FTS5 index; search_index.py rebuilds it)."""

from __future__ import annotations

import logging
import sqlite3

from .connection import StoreConnection
from .errors import is_busy, is_index_damaged
from .rows import SearchHit

log = logging.getLogger("hermes_tui.storage")

# Newest hits first: FTS5 walks rowids in descending order and stops at the limit, so a
# common word costs the same as a rare one (ORDER BY rank scores every hit).
_SEARCH = (
    "SELECT m.session_id, s.title, s.updated_at, m.id AS message_id, m.role,"
    " hit.snippet FROM ("
    "   SELECT rowid, snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet"
    "   FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
    " ) AS hit"
    " JOIN messages m ON m.id = hit.rowid"
    " JOIN sessions s ON s.id = m.session_id"
    " ORDER BY m.id DESC"
)


def fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: every word a quoted prefix phrase, ANDed.

    Quoting makes FTS5 syntax (AND, *, (, ", :, ^) plain text; doubled quotes escape quotes.
    """
    terms = [word.replace('"', '""') for word in text.split()]
    return " ".join(f'"{term}"*' for term in terms)


async def search_messages(conn: StoreConnection, query: str, limit: int) -> list[SearchHit]:
    """Up to `limit` hits for free text, newest first; a damaged index raises its sentence."""
    conn.check_open()
    match = fts_query(query)
    if not match:
        return []
    try:
        async with conn.execute(_SEARCH, (match, limit)) as cur:
            rows = await cur.fetchall()
    except sqlite3.DatabaseError as exc:
        if is_busy(exc) or is_index_damaged(exc) or not isinstance(exc, sqlite3.OperationalError):
            raise conn.translate(exc) from exc
        # Quoting should make every input valid; if FTS5 still objects, no hits is the
        # honest answer for a search box, not a crash.
        log.debug("fts query %r failed: %s", match, exc)
        return []
    return [dict(r) for r in rows]  # type: ignore[misc]
