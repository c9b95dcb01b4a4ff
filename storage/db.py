"""SessionDB: the async session store over aiosqlite (SPEC S1, S4-S8, D1)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite

from .accounting import TokenAccounting
from .errors import (
    StorageClosedError,
    StorageError,
    StorageLockedError,
    StorageVersionError,
    UnknownSessionError,
    is_busy,
    translate,
)
from .files import private_dir, private_file, tighten_if_present
from .schema import MESSAGE_COLUMNS, MIGRATIONS, SCHEMA_VERSION, SESSION_COLUMNS
from .writer import Op, Writer, run_threadsafe

log = logging.getLogger("hermes_tui.storage")

DEFAULT_LOCK_TIMEOUT = 5.0
"""Seconds a write retries BEGIN IMMEDIATE while another process holds the lock."""

# Short, so one attempt never parks the connection thread for long; the jittered retry loop
# above it owns the real waiting and can give up with a clear message.
_BUSY_TIMEOUT_MS = 50

UPDATABLE_SESSION_FIELDS = frozenset(
    {"title", "model", "provider", "workspace", "metadata", "created_at", "updated_at",
     "last_activity_at"}
)  # fmt: skip
# Changing these must not be overtaken by an older queued write (SPEC S5).
FLUSH_FIRST_FIELDS = frozenset({"model", "provider", "metadata"})


def _encode_message(row: dict) -> dict:
    """Snapshot a message row into column values (JSON encoded) at the moment it is handed over.

    Taken on the caller's side so a later mutation of the caller's dict cannot change what is
    written. Unknown keys (e.g. ephemeral flags) are ignored: the table holds what it holds.
    """
    if not isinstance(row, dict):
        raise TypeError(f"a message row must be a dict, not {type(row).__name__}")
    role = row.get("role")
    if not role:
        raise ValueError("a message row needs a role")
    content = row.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        raise TypeError(f"message content must be a str, not {type(content).__name__}")
    tool_calls = row.get("tool_calls")
    display_metadata = row.get("display_metadata")
    return {
        "role": str(role),
        "content": content,
        "tool_calls": json.dumps(tool_calls) if tool_calls else None,
        "tool_call_id": row.get("tool_call_id"),
        "name": row.get("name"),
        "display_kind": row.get("display_kind"),
        "display_metadata": json.dumps(display_metadata) if display_metadata is not None else None,
        "compacted": 1 if row.get("compacted") else 0,
        "created_at": row.get("created_at") or time.time(),
    }


def _check_session_fields(fields: dict) -> dict:
    unknown = set(fields) - UPDATABLE_SESSION_FIELDS
    if unknown:
        raise ValueError(
            f"unknown session field(s) {sorted(unknown)}; "
            f"allowed: {sorted(UPDATABLE_SESSION_FIELDS)}"
        )
    out = dict(fields)
    if "metadata" in out:
        out["metadata"] = json.dumps(out["metadata"]) if out["metadata"] is not None else None
    return out


def _fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: every word a quoted prefix phrase, ANDed.

    Quoting makes FTS5 syntax (AND, *, (, ", :, ^) plain text; doubled quotes escape quotes.
    """
    terms = [word.replace('"', '""') for word in text.split()]
    return " ".join(f'"{term}"*' for term in terms)


def _session_dict(row: aiosqlite.Row) -> dict:
    out = dict(row)
    raw = out.get("metadata")
    out["metadata"] = json.loads(raw) if raw else {}
    return out


def _message_dict(row: aiosqlite.Row) -> dict:
    out = dict(row)
    out["tool_calls"] = json.loads(out["tool_calls"]) if out["tool_calls"] else None
    raw = out["display_metadata"]
    out["display_metadata"] = json.loads(raw) if raw is not None else None
    out["compacted"] = bool(out["compacted"])
    return out


class SessionDB:
    """Async SQLite store of sessions, messages and token usage, with a queued writer."""

    path: Path

    def __init__(self, path: Path, conn: aiosqlite.Connection, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self.last_write_error: str | None = None
        # Called on the owning loop with the one-sentence reason each time a write fails.
        self.on_write_error: Callable[[str], None] | None = None
        self._conn = conn
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        # One connection: concurrent coroutines must not interleave inside a transaction.
        self._write_lock = asyncio.Lock()
        self._writer = Writer(self, self._loop)
        self._closed = False
        self._close_error: StorageError | None = None
        # Token/cost deltas: their own queue, writer thread and connection (SPEC S2-S7).
        self.accounting = TokenAccounting(
            path, lock_timeout=lock_timeout, on_error=self._accounting_error
        )

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls, path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> SessionDB:
        """Open (creating if needed) the database at path, in WAL mode, migrated to date."""
        path = Path(path).expanduser()
        try:
            private_dir(path.parent)
            # SQLite creates its -wal and -shm files with the database file's mode, so a
            # 0600 state.db made here keeps all three private (SPEC H5).
            private_file(path)
            for suffix in ("-wal", "-shm"):
                tighten_if_present(f"{path}{suffix}")
            pending = aiosqlite.connect(path, isolation_level=None)
            # A daemon worker: a process that dies before close() (a crash, a failed test)
            # still exits instead of waiting forever on an idle connection thread. Every
            # commit is already durable (synchronous=FULL); nothing is lost by not joining it.
            pending._thread.daemon = True
            conn = await pending
        except (OSError, sqlite3.Error) as exc:
            raise translate(exc, path) from exc
        conn.row_factory = aiosqlite.Row
        db = cls(path, conn, lock_timeout)
        try:
            await db._setup()
        except BaseException as exc:
            await conn.close()
            if isinstance(exc, (sqlite3.Error, OSError)):
                raise translate(exc, path) from exc
            raise
        return db

    async def _setup(self) -> None:
        await self._execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        await self._execute("PRAGMA foreign_keys = ON")
        # Reading the header first turns "not a database" into a clear error before anything
        # else touches the file.
        version = await self._user_version()
        if version > SCHEMA_VERSION:
            raise StorageVersionError(self.path, version, SCHEMA_VERSION)
        await self._retry_locked(lambda: self._execute("PRAGMA journal_mode = WAL"))
        # FULL (SQLite's default): a commit survives power loss and OS crashes too, not only a
        # killed process, at one WAL fsync per commit. A turn commits a handful of times; the
        # per-model-call token accounting goes through the queue, so the loop never waits for
        # that fsync (SPEC S2, S8).
        await self._execute("PRAGMA synchronous = FULL")
        if version < SCHEMA_VERSION:
            await self._migrate()

    async def _user_version(self) -> int:
        async with self._conn.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return int(row[0])

    async def _migrate(self) -> None:
        async with self._write_lock:
            await self._begin_immediate()
            try:
                # Re-read under the write lock: another process may have migrated meanwhile.
                version = await self._user_version()
                if version > SCHEMA_VERSION:
                    raise StorageVersionError(self.path, version, SCHEMA_VERSION)
                for target in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[target - 1]:
                        await self._execute(statement)
                    await self._execute(f"PRAGMA user_version = {target}")
                await self._execute("COMMIT")
            except BaseException:
                await self._rollback_quietly()
                raise

    async def close(self) -> None:
        """Drain the write queue, then close the connection; raises if queued writes were lost."""
        if self._closed:
            return
        try:
            # Messages first: a queued model switch flushes the token queue before it lands.
            await self._writer.stop()
        finally:
            try:
                await asyncio.to_thread(self.accounting.close)
            except StorageError as exc:
                self._close_error = self._close_error or exc
            self._closed = True
            await self._conn.close()
        if self._close_error is not None:
            raise self._close_error

    async def __aenter__(self) -> SessionDB:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ low level

    async def _execute(self, sql: str, params: tuple | dict = ()) -> aiosqlite.Cursor:
        return await self._conn.execute(sql, params)

    def _in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def _rollback_quietly(self) -> None:
        try:
            if self._conn.in_transaction:
                await self._execute("ROLLBACK")
        except sqlite3.Error:
            log.debug("rollback failed", exc_info=True)

    def _translate(self, exc: BaseException) -> StorageError:
        return translate(exc, self.path)

    def _record_write_error(self, err: StorageError) -> None:
        reason = str(err)
        log.warning("session write failed: %s", reason)
        self.last_write_error = reason
        self._notify_write_error(reason)

    def _accounting_error(self, err: StorageError) -> None:
        # Called on the accounting writer's thread: record now, notify on the owning loop.
        reason = str(err)
        self.last_write_error = reason
        if threading.get_ident() == self._loop_thread:
            self._notify_write_error(reason)
            return
        try:
            self._loop.call_soon_threadsafe(self._notify_write_error, reason)
        except RuntimeError:  # the loop is gone (a drain at exit): nobody to tell
            pass

    def _notify_write_error(self, reason: str) -> None:
        if self.on_write_error is not None:
            try:
                self.on_write_error(reason)
            except Exception:
                log.exception("on_write_error callback failed")

    async def _retry_locked(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """Run attempt, retrying with jitter while the database is locked by someone else."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            try:
                return await attempt()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StorageLockedError(self.path) from exc
                # Jitter so two waiting processes do not retry in lockstep.
                await asyncio.sleep(min(remaining, random.uniform(delay / 2, delay)))
                delay = min(delay * 2, 0.2)

    async def _begin_immediate(self) -> None:
        if self._closed:
            raise StorageClosedError(self.path)
        await self._retry_locked(lambda: self._execute("BEGIN IMMEDIATE"))

    async def _write(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        """Run fn inside one BEGIN IMMEDIATE transaction; sqlite errors become StorageErrors."""
        async with self._write_lock:
            try:
                await self._begin_immediate()
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            try:
                result = await fn()
                await self._execute("COMMIT")
            except BaseException as exc:
                await self._rollback_quietly()
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc) from exc
                raise
            return result

    def _check_open(self) -> None:
        if self._closed:
            raise StorageClosedError(self.path)

    # ------------------------------------------------------------------ sessions

    async def create_session(
        self,
        *,
        model: str,
        provider: str,
        workspace: str,
        title: str = "",
        session_id: str | None = None,
        metadata: dict | None = None,
    ) -> dict:
        """Create a session (id: 12 hex chars from uuid4 unless given) and return its row."""
        self._check_open()
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()

        async def insert() -> None:
            await self._execute(
                "INSERT INTO sessions (id, title, model, provider, workspace, created_at,"
                " updated_at, last_activity_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (sid, title or "", model, provider, workspace, now, now, now,
                 json.dumps(metadata) if metadata is not None else None),
            )  # fmt: skip

        await self._write(insert)
        session = await self.get_session(sid)
        assert session is not None
        return session

    async def get_session(self, session_id: str) -> dict | None:
        """The session's row with message_count, or None (token figures read through)."""
        self._check_open()
        await self._read_through()
        async with self._conn.execute(
            f"SELECT {self._session_select} FROM sessions s WHERE s.id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        return _session_dict(row) if row else None

    _session_select = ", ".join(f"s.{c}" for c in SESSION_COLUMNS) + (
        ", (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id"
        " AND m.display_kind IS NULL) AS message_count"
    )

    async def list_sessions(self, limit: int = 200) -> list[dict]:
        """Sessions newest first by updated_at, each with message_count (display rows excluded)."""
        self._check_open()
        await self._read_through()
        async with self._conn.execute(
            f"SELECT {self._session_select} FROM sessions s"
            " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?",
            (limit,),
        ) as cur:
            rows = await cur.fetchall()
        return [_session_dict(r) for r in rows]

    async def find_session(self, ref: str) -> dict | None:
        """Exact id, else a unique id prefix, else the newest session whose title contains ref."""
        self._check_open()
        ref = ref.strip()
        if not ref:
            return None
        exact = await self.get_session(ref)
        if exact:
            return exact
        escaped = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        async with self._conn.execute(
            "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (escaped + "%",)
        ) as cur:
            ids = [r[0] for r in await cur.fetchall()]
        if len(ids) == 1:
            return await self.get_session(ids[0])
        async with self._conn.execute(
            "SELECT id FROM sessions WHERE instr(lower(title), lower(?)) > 0"
            " ORDER BY updated_at DESC, rowid DESC LIMIT 1",
            (ref,),
        ) as cur:
            row = await cur.fetchone()
        return await self.get_session(row[0]) if row else None

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Set session fields (title, model, provider, workspace, metadata dict, timestamps)."""
        self._check_open()
        values = _check_session_fields(fields)
        if not values:
            return
        if FLUSH_FIRST_FIELDS & values.keys():
            await self.flush()
        await self._write(lambda: self._update_session_tx(session_id, values))

    async def _update_session_tx(self, session_id: str, values: dict) -> None:
        assignments = ", ".join(f"{key} = :{key}" for key in values)
        cur = await self._execute(
            f"UPDATE sessions SET {assignments} WHERE id = :_id", {**values, "_id": session_id}
        )
        if cur.rowcount == 0:
            raise UnknownSessionError(session_id)

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session with its messages and usage rows; False if it did not exist."""
        self._check_open()
        await self.flush()

        async def delete() -> int:
            cur = await self._execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return cur.rowcount

        return bool(await self._write(delete))

    # ------------------------------------------------------------------ messages

    async def add_message(self, session_id: str, row: dict) -> int:
        """Append a message (seq = next in session), bump updated_at, return the message id."""
        self._check_open()
        values = _encode_message(row)
        return await self._write(lambda: self._insert_message_tx(session_id, values))

    async def _insert_message_tx(self, session_id: str, values: dict) -> int:
        # Touching the session first both bumps updated_at and names a missing session
        # clearly, instead of a bare FOREIGN KEY failure.
        cur = await self._execute(
            "UPDATE sessions SET updated_at = max(coalesce(updated_at, 0), ?) WHERE id = ?",
            (values["created_at"], session_id),
        )
        if cur.rowcount == 0:
            raise UnknownSessionError(session_id)
        cur = await self._execute(
            "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id,"
            " name, display_kind, display_metadata, compacted, created_at)"
            " VALUES (:session_id, (SELECT coalesce(max(seq), 0) + 1 FROM messages"
            " WHERE session_id = :session_id), :role, :content, :tool_calls, :tool_call_id,"
            " :name, :display_kind, :display_metadata, :compacted, :created_at)",
            {**values, "session_id": session_id},
        )
        return int(cur.lastrowid)

    async def load_messages(self, session_id: str, *, include_compacted: bool = True) -> list[dict]:
        """The session's messages in seq order, JSON fields decoded."""
        self._check_open()
        where = "" if include_compacted else " AND compacted = 0"
        async with self._conn.execute(
            f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages"
            f" WHERE session_id = ?{where} ORDER BY seq",
            (session_id,),
        ) as cur:
            rows = await cur.fetchall()
        out = [_message_dict(r) for r in rows]
        for message in out:
            del message["session_id"]
        return out

    async def load_messages_page(
        self,
        session_id: str,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
        limit: int = 100,
    ) -> list[dict]:
        """Up to `limit` messages in seq order: the newest before `before_seq`, the oldest
        after `after_seq`, or the newest of the session with neither (a transcript window)."""
        self._check_open()
        if after_seq is not None:
            where, order, params = " AND seq > ?", "ASC", (session_id, after_seq, limit)
        elif before_seq is not None:
            where, order, params = " AND seq < ?", "DESC", (session_id, before_seq, limit)
        else:
            where, order, params = "", "DESC", (session_id, limit)
        async with self._conn.execute(
            f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM messages"
            f" WHERE session_id = ?{where} ORDER BY seq {order} LIMIT ?",
            params,
        ) as cur:
            rows = await cur.fetchall()
        out = [_message_dict(r) for r in rows]
        for message in out:
            del message["session_id"]
        return out if order == "ASC" else out[::-1]

    async def last_message_seq(self, session_id: str, role: str | None = None) -> int | None:
        """The seq of the session's newest message (of `role`, if given), or None."""
        self._check_open()
        where = " AND role = ?" if role else ""
        params = (session_id, role) if role else (session_id,)
        async with self._conn.execute(
            f"SELECT max(seq) FROM messages WHERE session_id = ?{where}", params
        ) as cur:
            found = await cur.fetchone()
        return None if found is None or found[0] is None else int(found[0])

    async def apply_compaction(
        self,
        session_id: str,
        *,
        compacted_ids: list[int],
        before_id: int | None,
        rows: list[dict],
        merge: tuple[int, str, dict] | None = None,
    ) -> list[int]:
        """Record a compaction in one transaction; return the ids of the inserted rows.

        The summarised rows stay (marked `compacted = 1`, still searchable); `rows` (the
        compaction marker and the summary) are inserted just before `before_id`, the first
        kept message, so `load_messages(include_compacted=False)` lists exactly what the model
        sees. `merge` = (id, content, display_metadata) rewrites the first kept row when the
        summary had to merge into it.
        """
        self._check_open()
        await self.flush()
        encoded = [_encode_message(r) for r in rows]
        if merge is not None:
            merge_meta = json.dumps(merge[2]) if merge[2] is not None else None

        async def apply() -> list[int]:
            cur = await self._execute(
                "UPDATE sessions SET updated_at = max(coalesce(updated_at, 0), ?) WHERE id = ?",
                (time.time(), session_id),
            )
            if cur.rowcount == 0:
                raise UnknownSessionError(session_id)
            if compacted_ids:
                marks = ", ".join("?" for _ in compacted_ids)
                await self._execute(
                    f"UPDATE messages SET compacted = 1 WHERE session_id = ? AND id IN ({marks})",
                    (session_id, *compacted_ids),
                )
            seq = None
            if before_id is not None:
                async with self._conn.execute(
                    "SELECT seq FROM messages WHERE id = ? AND session_id = ?",
                    (before_id, session_id),
                ) as c:
                    found = await c.fetchone()
                seq = int(found[0]) if found else None
            ids = []
            if seq is None:
                for values in encoded:
                    ids.append(await self._insert_message_tx(session_id, values))
            else:
                # Open a gap of len(rows) seq slots; through negatives, so the unique
                # (session_id, seq) index never sees two rows in one slot.
                k = len(encoded)
                await self._execute(
                    "UPDATE messages SET seq = -(seq + ?) WHERE session_id = ? AND seq >= ?",
                    (k, session_id, seq),
                )
                await self._execute(
                    "UPDATE messages SET seq = -seq WHERE session_id = ? AND seq < 0",
                    (session_id,),
                )
                for offset, values in enumerate(encoded):
                    cur = await self._execute(
                        "INSERT INTO messages (session_id, seq, role, content, tool_calls,"
                        " tool_call_id, name, display_kind, display_metadata, compacted,"
                        " created_at) VALUES (:session_id, :seq, :role, :content, :tool_calls,"
                        " :tool_call_id, :name, :display_kind, :display_metadata, :compacted,"
                        " :created_at)",
                        {**values, "session_id": session_id, "seq": seq + offset},
                    )
                    ids.append(int(cur.lastrowid))
            if merge is not None:
                await self._execute(
                    "UPDATE messages SET content = ?, display_metadata = ?"
                    " WHERE id = ? AND session_id = ?",
                    (merge[1], merge_meta, merge[0], session_id),
                )
            return ids

        return await self._write(apply)

    async def override_message_content(self, message_id: int, content: str) -> bool:
        """Replace a message's text with a clean version; False for a row that carries a
        compaction summary, which must never be overwritten (SPEC C5)."""
        self._check_open()
        await self.flush()

        async def update() -> int:
            cur = await self._execute(
                "UPDATE messages SET content = ? WHERE id = ? AND (display_metadata IS NULL"
                " OR json_extract(display_metadata, '$.compaction_summary') IS NULL)",
                (content, message_id),
            )
            return cur.rowcount

        return bool(await self._write(update))

    async def search(self, query: str, limit: int = 50) -> list[dict]:
        """Full-text search over every session's messages, newest hit first.

        Each hit: session_id, title, updated_at, message_id, role, and a snippet of the
        message with the matched words in [ ]. Free text is safe (FTS5 syntax is quoted)."""
        self._check_open()
        match = _fts_query(query)
        if not match:
            return []
        try:
            # Newest hits first: FTS5 walks rowids in descending order and stops at the limit,
            # so a common word costs the same as a rare one (ORDER BY rank scores every hit).
            async with self._conn.execute(
                "SELECT m.session_id, s.title, s.updated_at, m.id AS message_id, m.role,"
                " hit.snippet FROM ("
                "   SELECT rowid, snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet"
                "   FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
                " ) AS hit"
                " JOIN messages m ON m.id = hit.rowid"
                " JOIN sessions s ON s.id = m.session_id"
                " ORDER BY m.id DESC",
                (match, limit),
            ) as cur:
                rows = await cur.fetchall()
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise self._translate(exc) from exc
            # Quoting should make every input valid; if FTS5 still objects, no hits is the
            # honest answer for a search box, not a crash.
            log.debug("fts query %r failed: %s", match, exc)
            return []
        return [dict(r) for r in rows]

    # ------------------------------------------------------------------ usage

    async def add_usage(self, session_id: str, **usage: Any) -> None:
        """Apply a token/cost delta now (the arguments of update_token_counts)."""
        self._check_open()
        await self.flush()
        await asyncio.to_thread(self.accounting.update_token_counts, session_id, **usage)

    def update_token_counts(self, session_id: str, **usage: Any) -> None:
        """Apply one token/cost delta synchronously on the caller's thread (SPEC S2).

        Arguments: model, provider, route, input/output/cache_read/cache_write/reasoning
        tokens, api_calls (default 1), estimated_cost_usd, actual_cost_usd (None keeps the
        stored value), absolute=False (True: the figures are the new totals).
        """
        self.accounting.update_token_counts(session_id, **usage)

    def queue_token_counts(self, session_id: str, **usage: Any) -> None:
        """update_token_counts' arguments, queued: an append and a notify on the caller (S2).

        Never blocks; a missing session id or a wrong keyword raises ValueError/TypeError at
        once, a value that cannot be converted is logged and dropped by the writer. After
        close() the delta is applied inline and raises StorageClosedError like the
        synchronous call.
        """
        self.accounting.queue_token_counts(session_id, **usage)

    def flush_token_counts(self, timeout: float | None = None) -> None:
        """Read-your-writes for token/cost readers, from any thread (S4).

        An attribute check when nothing is queued; it never needs the event loop.
        """
        self.accounting.flush_token_counts(timeout)

    async def _read_through(self) -> None:
        if self.accounting.idle:
            return
        try:
            await asyncio.to_thread(self.accounting.flush_token_counts)
        except StorageError as exc:  # already reported; a stale figure beats no list
            log.debug("reading without the token flush: %s", exc)

    async def usage(self, session_id: str) -> list[dict]:
        """The session's per (model, provider, route) usage rows (read through the queue)."""
        self._check_open()
        await self._read_through()
        async with self._conn.execute(
            "SELECT * FROM session_model_usage WHERE session_id = ?"
            " ORDER BY model, provider, route",
            (session_id,),
        ) as cur:
            rows = await cur.fetchall()
        return [dict(r) for r in rows]

    # ------------------------------------------------------------------ queued writes

    def _enqueue(
        self, kind: str, session_id: str, prepare: Callable[[], Any]
    ) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        try:
            self._writer.submit(Op(kind, session_id, prepare(), fut))
        except Exception as exc:
            err = (
                exc
                if isinstance(exc, (StorageError, ValueError, TypeError))
                else self._translate(exc)
            )
            log.warning("session write not queued: %s", err)
            fut.set_exception(err)
        return fut

    def enqueue_message(self, session_id: str, row: dict) -> concurrent.futures.Future:
        """Queue add_message from any thread; the Future resolves to the message id."""
        return self._enqueue("message", session_id, lambda: _encode_message(row))

    def enqueue_session_update(self, session_id: str, **fields: Any) -> concurrent.futures.Future:
        """Queue update_session from any thread; the Future resolves to None."""
        return self._enqueue("session_update", session_id, lambda: _check_session_fields(fields))

    def enqueue_usage(self, session_id: str, **usage: Any) -> concurrent.futures.Future:
        """queue_token_counts returning a done Future (failed on bad arguments or after close)."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        try:
            self.queue_token_counts(session_id, **usage)
        except Exception as exc:
            log.warning("token delta not queued: %s", exc)
            fut.set_exception(exc)
        else:
            fut.set_result(None)
        return fut

    async def _apply_op(self, op: Op) -> Any:
        """Apply one queued write inside the writer's open transaction."""
        if op.kind == "message":
            return await self._insert_message_tx(op.session_id, op.payload)
        if op.kind == "session_update":
            return await self._update_session_tx(op.session_id, op.payload)
        raise ValueError(f"unknown queued write {op.kind!r}")

    async def flush(self) -> None:
        """Wait until every write (messages and token deltas) queued before this call is
        applied; instant when idle. Raises StorageLockedError if the lock stays held."""
        if not self._writer.idle:
            await self._writer.flush()
        if not self.accounting.idle:
            await asyncio.to_thread(self.accounting.flush_token_counts)

    def flush_threadsafe(self, timeout: float = 30, *, tokens: bool = True) -> None:
        """Blocking flush() from a thread other than the owning loop's.

        tokens=False waits for the message writer only (token deltas stay queued).
        """
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("flush_threadsafe() on the owning loop's thread; await flush()")
        if not self._writer.idle:
            self.call(self._writer.flush, timeout=timeout)
        if tokens:
            self.accounting.flush_token_counts(timeout)

    def call(
        self, coro_fn: Callable[..., Awaitable[Any]], *args: Any, timeout: float = 30, **kwargs: Any
    ) -> Any:
        """Run an async method of this db on the owning loop from another thread; return it."""
        return run_threadsafe(self._loop, self._loop_thread, coro_fn, args, kwargs, timeout)
