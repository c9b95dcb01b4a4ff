"""The sessions table: create, read, find and update sessions."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .connection import StoreConnection
from .errors import UnknownSessionError
from .rows import SessionRow, encode_metadata, session_row
from .schema import SESSION_COLUMNS

_SELECT = ", ".join(f"s.{c}" for c in SESSION_COLUMNS) + (
    ", (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id"
    " AND m.display_kind IS NULL) AS message_count"
)


class Sessions:
    """Statements on the sessions table, over the store's connection."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    async def create(
        self,
        *,
        model: str,
        provider: str,
        workspace: str,
        title: str = "",
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionRow:
        """Insert a session (id: 12 hex chars from uuid4 unless given; `parent_session_id`:
        the session a subagent's one was started by); return its row."""
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()

        async def insert() -> None:
            await self._conn.execute(
                "INSERT INTO sessions (id, title, model, provider, workspace, created_at,"
                " updated_at, last_activity_at, metadata, parent_session_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, title or "", model, provider, workspace, now, now, now,
                 encode_metadata(metadata), parent_session_id),
            )  # fmt: skip

        await self._conn.write(insert)
        session = await self.get(sid)
        assert session is not None
        return session

    async def get(self, session_id: str) -> SessionRow | None:
        """The session's row with message_count, or None."""
        row = await self._conn.fetchone(
            f"SELECT {_SELECT} FROM sessions s WHERE s.id = ?", (session_id,)
        )
        return session_row(row) if row else None

    async def newest(self, limit: int) -> list[SessionRow]:
        """Up to `limit` sessions, newest first by updated_at; a subagent's session is its
        parent's part, not one of the list (G1)."""
        rows = await self._conn.fetchall(
            f"SELECT {_SELECT} FROM sessions s WHERE s.parent_session_id IS NULL"
            " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?",
            (limit,),
        )
        return [session_row(r) for r in rows]

    async def children(self, session_id: str) -> list[SessionRow]:
        """The sessions of the subagents `session_id` ran, oldest first (G1)."""
        rows = await self._conn.fetchall(
            f"SELECT {_SELECT} FROM sessions s WHERE s.parent_session_id = ?"
            " ORDER BY s.created_at, s.rowid",
            (session_id,),
        )
        return [session_row(r) for r in rows]

    async def count(self) -> int:
        """How many sessions are stored (a subagent's is its parent's part, not counted)."""
        row = await self._conn.fetchone(
            "SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NULL"
        )
        return int(row[0]) if row else 0

    async def latest_in(self, workspace: str) -> SessionRow | None:
        """The session last updated among those that worked in `workspace`, or None."""
        row = await self._conn.fetchone(
            "SELECT id FROM sessions WHERE workspace = ? AND parent_session_id IS NULL"
            " ORDER BY updated_at DESC, rowid DESC LIMIT 1",
            (workspace,),
        )
        return await self.get(row[0]) if row else None

    async def find(self, ref: str) -> SessionRow | None:
        """Exact id, else a unique id prefix, else the newest session whose title contains ref."""
        ref = ref.strip()
        if not ref:
            return None
        exact = await self.get(ref)
        if exact:
            return exact
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        ids = [
            r[0]
            for r in await self._conn.fetchall(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (escaped + "%",)
            )
        ]
        if len(ids) == 1:
            return await self.get(ids[0])
        row = await self._conn.fetchone(
            "SELECT id FROM sessions WHERE instr(lower(title), lower(?)) > 0"
            " ORDER BY updated_at DESC, rowid DESC LIMIT 1",
            (ref,),
        )
        return await self.get(row[0]) if row else None

    async def update_tx(self, session_id: str, values: dict[str, Any]) -> None:
        """Set checked, encoded fields (rows.session_values) inside an open transaction."""
        assignments = ", ".join(f"{key} = :{key}" for key in values)
        cur = await self._conn.execute(
            f"UPDATE sessions SET {assignments} WHERE id = :_id", {**values, "_id": session_id}
        )
        if cur.rowcount == 0:
            raise UnknownSessionError(session_id)
