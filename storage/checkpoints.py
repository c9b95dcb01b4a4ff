"""The checkpoints table, and sessions branched off others: forks and rewound branches (X2)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, TypedDict

from .connection import StoreConnection
from .errors import UnknownSessionError
from .schema import CHECKPOINT_COLUMNS, MESSAGE_COLUMNS

_CHECKPOINT_FIELDS = frozenset({"after_ref", "shell", "paths", "undone", "message_id"})
"""What a checkpoint update may set."""


class CheckpointRow(TypedDict):
    """A checkpoint: the shadow commits before and after a turn's changes, and what made them."""

    id: int
    key: str
    session_id: str
    message_id: int | None
    kind: str
    workspace: str
    before_ref: str
    after_ref: str | None
    shell: bool
    paths: dict[str, str | None]
    """Each path the agent wrote, with the blob id of what it wrote."""
    undone: bool
    created_at: float | None


def checkpoint_values(row: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's column values, encoded (on the caller's side, like a message's)."""
    values = {
        "key": str(row["key"]),
        "message_id": row.get("message_id"),
        "kind": str(row.get("kind") or "turn"),
        "workspace": str(row.get("workspace") or ""),
        "before_ref": str(row["before_ref"]),
        "after_ref": row.get("after_ref"),
        "shell": 1 if row.get("shell") else 0,
        "paths": json.dumps(row.get("paths") or {}, sort_keys=True),
        "undone": 1 if row.get("undone") else 0,
        "created_at": row.get("created_at") or time.time(),
    }
    return values


def checkpoint_update_values(fields: dict[str, Any]) -> dict[str, Any]:
    """Checked, encoded values of a checkpoint update; ValueError names unknown fields."""
    unknown = set(fields) - _CHECKPOINT_FIELDS
    if unknown:
        raise ValueError(f"unknown checkpoint field(s) {sorted(unknown)}")
    values = dict(fields)
    if "paths" in values:
        values["paths"] = json.dumps(values["paths"] or {}, sort_keys=True)
    for flag in ("shell", "undone"):
        if flag in values:
            values[flag] = 1 if values[flag] else 0
    return values


def _checkpoint_row(row: Any) -> CheckpointRow:
    out = dict(row)
    out["paths"] = json.loads(out["paths"]) if out.get("paths") else {}
    out["shell"] = bool(out["shell"])
    out["undone"] = bool(out["undone"])
    return out  # type: ignore[return-value]


_COPIED = ", ".join(c for c in MESSAGE_COLUMNS if c not in ("id", "session_id", "created_at"))


class Checkpoints:
    """Statements on the checkpoints table and on sessions made from other sessions."""

    def __init__(self, conn: StoreConnection) -> None:
        self._conn = conn

    async def insert_tx(self, session_id: str, values: dict[str, Any]) -> int:
        """Add a checkpoint inside an open transaction; its id."""
        cur = await self._conn.execute(
            "INSERT INTO checkpoints (key, session_id, message_id, kind, workspace, before_ref,"
            " after_ref, shell, paths, undone, created_at) VALUES (:key, :session_id,"
            " :message_id, :kind, :workspace, :before_ref, :after_ref, :shell, :paths, :undone,"
            " :created_at)",
            {**values, "session_id": session_id},
        )
        assert cur.lastrowid is not None  # a successful INSERT always sets it
        return cur.lastrowid

    async def update_tx(self, key: str, values: dict[str, Any]) -> None:
        """Set checked fields of the checkpoint `key` inside an open transaction."""
        if not values:
            return
        assignments = ", ".join(f"{name} = :{name}" for name in values)
        await self._conn.execute(
            f"UPDATE checkpoints SET {assignments} WHERE key = :_key", {**values, "_key": key}
        )

    async def of_session(self, session_id: str) -> list[CheckpointRow]:
        """The session's checkpoints, oldest first."""
        rows = await self._conn.fetchall(
            f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints"
            " WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [_checkpoint_row(r) for r in rows]

    async def branch_tx(
        self, session_id: str, seq: int, *, kind: str, move_later: bool, title: str | None
    ) -> str:
        """A new session with `session_id`'s rows before `seq` (a copy) inside a transaction.

        `move_later` (a rewind) also moves the rows from `seq` on into it, so they leave the
        session, which continues from before `seq`; a fork copies the rows up to `seq` too.
        """
        source = await self._conn.fetchone(
            "SELECT title, model, provider, workspace FROM sessions WHERE id = ?", (session_id,)
        )
        if source is None:
            raise UnknownSessionError(session_id)
        new_id = uuid.uuid4().hex[:12]
        now = time.time()
        label = title if title is not None else source["title"]
        await self._conn.execute(
            "INSERT INTO sessions (id, title, model, provider, workspace, created_at, updated_at,"
            " last_activity_at, parent_id, fork_seq, branch_kind)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new_id, label, source["model"], source["provider"], source["workspace"], now, now,
             now, session_id, seq, kind),
        )  # fmt: skip
        last_copied = seq - 1 if move_later else seq
        await self._conn.execute(
            f"INSERT INTO messages (session_id, {_COPIED}, created_at)"
            f" SELECT ?, {_COPIED}, created_at FROM messages"
            " WHERE session_id = ? AND seq <= ? ORDER BY seq",
            (new_id, session_id, last_copied),
        )
        # The images the copied rows reference go with them (kept once per session, G4).
        await self._conn.execute(
            "INSERT OR IGNORE INTO session_blobs (session_id, sha256, media_type, data,"
            " created_at) SELECT ?, sha256, media_type, data, created_at FROM session_blobs"
            " WHERE session_id = ?",
            (new_id, session_id),
        )
        if move_later:
            await self._conn.execute(
                "UPDATE messages SET session_id = ? WHERE session_id = ? AND seq >= ?",
                (new_id, session_id, seq),
            )
            await self._conn.execute(
                "UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id)
            )
        return new_id
