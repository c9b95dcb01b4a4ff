"""The messages table: the one INSERT, transcript reads, and recording a compaction."""

from __future__ import annotations

import time

from .connection import StoreConnection
from .errors import UnknownSessionError
from .rows import MessageRow, MessageValues, message_row
from .schema import MESSAGE_COLUMNS

_COLUMNS = ", ".join(c for c in MESSAGE_COLUMNS if c != "session_id")

# The one statement that adds a message. Without a seq it takes the next slot of the session
# (one index seek on the unique (session_id, seq) index); a compaction names its slots.
_INSERT = (
    "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id, name,"
    " display_kind, display_metadata, compacted, created_at) VALUES (:session_id,"
    " coalesce(:seq, (SELECT coalesce(max(seq), 0) + 1 FROM messages"
    " WHERE session_id = :session_id)), :role, :content, :tool_calls, :tool_call_id, :name,"
    " :display_kind, :display_metadata, :compacted, :created_at)"
)

_KEEP_BLOB = (
    "INSERT OR IGNORE INTO session_blobs (session_id, sha256, media_type, data, created_at)"
    " VALUES (?, ?, ?, ?, ?)"
)
"""A message's image is kept once per session: a second message carrying it adds nothing."""

_TOUCH_SESSION = "UPDATE sessions SET updated_at = max(coalesce(updated_at, 0), ?) WHERE id = ?"


class Messages:
    """Statements on the messages table, over the store's connection."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    async def insert_tx(self, session_id: str, values: MessageValues) -> int:
        """Append a message inside an open transaction (seq: the session's next); its id."""
        await self._touch_session(session_id, values["created_at"])
        return await self._insert(session_id, values, seq=None)

    async def _touch_session(self, session_id: str, when: float) -> None:
        # Touching the session first both bumps updated_at and names a missing session
        # clearly, instead of a bare FOREIGN KEY failure.
        cur = await self._conn.execute(_TOUCH_SESSION, (when, session_id))
        if cur.rowcount == 0:
            raise UnknownSessionError(session_id)

    async def _insert(self, session_id: str, values: MessageValues, *, seq: int | None) -> int:
        for sha256, media_type, data in values.get("blobs") or ():
            await self._conn.execute(
                _KEEP_BLOB, (session_id, sha256, media_type, data, values["created_at"])
            )
        cur = await self._conn.execute(_INSERT, {**values, "session_id": session_id, "seq": seq})
        assert cur.lastrowid is not None  # a successful INSERT always sets it
        return cur.lastrowid

    async def load(self, session_id: str, *, include_compacted: bool = True) -> list[MessageRow]:
        """The session's messages in seq order."""
        where = "" if include_compacted else " AND compacted = 0"
        rows = await self._conn.fetchall(
            f"SELECT {_COLUMNS} FROM messages WHERE session_id = ?{where} ORDER BY seq",
            (session_id,),
        )
        return [message_row(r) for r in rows]

    async def page(
        self,
        session_id: str,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
        limit: int = 100,
    ) -> list[MessageRow]:
        """Up to `limit` messages in seq order: the newest before `before_seq`, the oldest
        after `after_seq`, or the newest of the session with neither (a transcript window)."""
        params: tuple[str | int, ...]
        if after_seq is not None:
            where, order, params = " AND seq > ?", "ASC", (session_id, after_seq, limit)
        elif before_seq is not None:
            where, order, params = " AND seq < ?", "DESC", (session_id, before_seq, limit)
        else:
            where, order, params = "", "DESC", (session_id, limit)
        rows = await self._conn.fetchall(
            f"SELECT {_COLUMNS} FROM messages"
            f" WHERE session_id = ?{where} ORDER BY seq {order} LIMIT ?",
            params,
        )
        out = [message_row(r) for r in rows]
        return out if order == "ASC" else out[::-1]

    async def blob(self, session_id: str, sha256: str) -> bytes | None:
        """The bytes of an image the session keeps, or None."""
        found = await self._conn.fetchone(
            "SELECT data FROM session_blobs WHERE session_id = ? AND sha256 = ?",
            (session_id, sha256),
        )
        return None if found is None else bytes(found[0])

    async def last_seq(self, session_id: str, role: str | None = None) -> int | None:
        """The seq of the session's newest message (of `role`, if given), or None."""
        where = " AND role = ?" if role else ""
        params = (session_id, role) if role else (session_id,)
        found = await self._conn.fetchone(
            f"SELECT max(seq) FROM messages WHERE session_id = ?{where}", params
        )
        return None if found is None or found[0] is None else int(found[0])

    async def compaction_tx(
        self,
        session_id: str,
        *,
        compacted_ids: list[int],
        before_id: int | None,
        rows: list[MessageValues],
        merge: tuple[int, str, str | None] | None,
    ) -> list[int]:
        """Record a compaction inside an open transaction; the ids of the inserted rows.

        See SessionDB.apply_compaction for what the arguments mean; `merge` carries its
        display metadata encoded already.
        """
        await self._touch_session(session_id, time.time())
        if compacted_ids:
            marks = ", ".join("?" for _ in compacted_ids)
            await self._conn.execute(
                f"UPDATE messages SET compacted = 1 WHERE session_id = ? AND id IN ({marks})",
                (session_id, *compacted_ids),
            )
        seq = None if before_id is None else await self._seq_of(session_id, before_id)
        if seq is None:
            ids = [await self.insert_tx(session_id, values) for values in rows]
        else:
            await self._open_gap(session_id, seq, len(rows))
            ids = [
                await self._insert(session_id, values, seq=seq + offset)
                for offset, values in enumerate(rows)
            ]
        if merge is not None:
            message_id, content, metadata = merge
            await self._conn.execute(
                "UPDATE messages SET content = ?, display_metadata = ?"
                " WHERE id = ? AND session_id = ?",
                (content, metadata, message_id, session_id),
            )
        return ids

    async def _seq_of(self, session_id: str, message_id: int) -> int | None:
        async with self._conn.execute(
            "SELECT seq FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id)
        ) as cur:
            found = await cur.fetchone()
        return int(found[0]) if found else None

    async def _open_gap(self, session_id: str, seq: int, size: int) -> None:
        # Shift every row from `seq` on by `size` slots; through negatives, so the unique
        # (session_id, seq) index never sees two rows in one slot.
        await self._conn.execute(
            "UPDATE messages SET seq = -(seq + ?) WHERE session_id = ? AND seq >= ?",
            (size, session_id, seq),
        )
        await self._conn.execute(
            "UPDATE messages SET seq = -seq WHERE session_id = ? AND seq < 0", (session_id,)
        )
