"""SessionDB: the async session store over aiosqlite (SPEC S1, S4-S8, D1).

The public face of storage/: it owns the one connection, the queued message writer and the
token accounting, and hands each call to the module that holds its idea: sessions.py,
messages.py and search.py for the tables, writer.py and accounting.py for the queues,
lifecycle.py for opening and the exit wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from .accounting import TokenAccounting
from .checkpoints import (
    CheckpointRow,
    Checkpoints,
    checkpoint_update_values,
    checkpoint_values,
)
from .connection import StoreConnection
from .errors import (
    StorageError,
    StorageLockedError,
    StorageNotSavedError,
    exit_wait_notice,
)
from .lifecycle import ExitWait, describe_writes, open_connection
from .messages import Messages
from .owning_loop import OwningLoop
from .rows import (
    FLUSH_FIRST_FIELDS,
    MessageRow,
    SearchHit,
    SessionRow,
    encode_message,
    encode_metadata,
    session_values,
)
from .search import search_messages, search_sessions
from .sessions import Sessions
from .spend import Spend, UsageRow
from .sqlite import DEFAULT_LOCK_TIMEOUT
from .writer import Op, Writer

log = logging.getLogger("hermes_tui.storage")

DEFAULT_EXIT_WAIT = 30.0
"""Seconds close() keeps retrying queued writes that another process's lock holds up."""

_T = TypeVar("_T")


class SessionDB:
    """Async SQLite store of sessions, messages and token usage, with a queued writer."""

    path: Path

    def __init__(self, conn: StoreConnection, exit_wait: float = DEFAULT_EXIT_WAIT) -> None:
        self.path = conn.path
        self.exit_wait = exit_wait
        self.last_write_error: str | None = None
        # Called on the owning loop with the one-sentence reason each time a write fails.
        self.on_write_error: Callable[[str], None] | None = None
        self._conn = conn
        self._owner = OwningLoop()
        self._sessions = Sessions(conn)
        self._messages = Messages(conn)
        self._checkpoints = Checkpoints(conn)
        self._spend = Spend(conn)
        self._exit = ExitWait(self.path, self._owner, lambda: self.idle, self.describe_pending)
        self._close_error: StorageError | None = None
        # Token/cost deltas: their own queue, writer thread and connection (SPEC S2-S7).
        self.accounting = TokenAccounting(
            self.path,
            lock_timeout=conn.lock_timeout,
            on_error=self._accounting_error,
            on_exit_wait=self._exit.announce,
        )
        self._writer = Writer(
            conn,
            self._owner.loop,
            self._apply_queued,
            tokens=self.accounting,
            report=self._record_write_error,
            exit_wait=self._exit,
        )

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        exit_wait: float = DEFAULT_EXIT_WAIT,
    ) -> SessionDB:
        """Open (creating if needed) the database at path, in WAL mode, migrated to date.

        lock_timeout: seconds one write waits for another process's lock before it reports
        the lock (and stays queued); exit_wait: how long close() keeps retrying.
        """
        conn = await open_connection(Path(path).expanduser(), lock_timeout)
        return cls(conn, exit_wait)

    async def close(
        self, *, wait: float | None = None, on_wait: Callable[[str], None] | None = None
    ) -> None:
        """Drain the write queue, then close the connection.

        Writes held up by another process's lock are retried for up to `wait` seconds
        (default: exit_wait); `on_wait(sentence)` is called once, on this loop, when that
        wait begins, with what it waits to save. Raises StorageNotSavedError naming what
        was given up when the lock outlasted the wait.
        """
        if self._conn.closed:
            return
        seconds = self.exit_wait if wait is None else wait
        deadline = self._exit.start(seconds, on_wait)
        self._conn.give_up_at = deadline
        if self.waiting_for_lock:
            self._exit.announce()
        try:
            # Messages first: a queued model switch flushes the token queue before it lands.
            await self._writer.stop(deadline)
        finally:
            try:
                await asyncio.to_thread(self.accounting.close, deadline)
            except StorageLockedError:
                pass  # counted in accounting.lost, reported below
            except StorageError as exc:
                self._close_error = self._close_error or exc
            await self._conn.close()
        if self._exit.unsaved or self.accounting.lost:
            what = describe_writes(self._exit.unsaved, tokens=self.accounting.lost)
            raise StorageNotSavedError(self.path, what, seconds)
        if self._close_error is not None:
            raise self._close_error

    async def __aenter__(self) -> SessionDB:
        return self

    async def __aexit__(self, *_exc_info: object) -> None:
        await self.close()

    @property
    def waiting_for_lock(self) -> bool:
        """True while queued writes wait for another process to release its lock."""
        return (self._writer.lock_blocked and not self._writer.idle) or (
            self.accounting.lock_blocked and not self.accounting.idle
        )

    @property
    def lock_wait_seconds(self) -> float | None:
        """How long writes have waited for another process's lock, while they do (else None)."""
        waited = self._conn.lock_wait_seconds
        if waited is None and self.waiting_for_lock:
            return 0.0  # between two retry windows: still waiting
        return waited

    @property
    def idle(self) -> bool:
        """True when no write (message, session update or token delta) is queued."""
        return self._writer.idle and self.accounting.idle

    def describe_pending(self) -> str:
        """What is still queued, in words: `3 messages and token counts`."""
        return describe_writes(self._writer.pending(), tokens=self.accounting.pending())

    async def wait_saved(
        self, timeout: float, on_wait: Callable[[str], None] | None = None
    ) -> bool:
        """Wait up to `timeout` s for every queued write to land; False if some still wait.

        `on_wait(sentence)` is called once when a held lock is what the wait is for.
        """
        deadline = time.monotonic() + timeout
        told = False
        while not self.idle:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self.waiting_for_lock and not told and on_wait is not None:
                told = True
                on_wait(exit_wait_notice(self.path, remaining, self.describe_pending()))
            try:
                await asyncio.wait_for(self._flush_within(remaining), remaining)
            except (StorageLockedError, TimeoutError):
                continue
        return True

    async def _flush_within(self, timeout: float) -> None:
        if not self._writer.idle:
            await self._writer.flush()
        if not self.accounting.idle:
            await asyncio.to_thread(self.accounting.flush_token_counts, timeout)

    # ------------------------------------------------------------------ failures

    def _record_write_error(self, err: StorageError) -> None:
        reason = str(err)
        log.warning("session write failed: %s", reason)
        self.last_write_error = reason
        self._notify_write_error(reason)

    def _accounting_error(self, err: StorageError) -> None:
        # Called on the accounting writer's thread: record now (a flusher that raises the
        # error must find it recorded), tell on_write_error on the owning loop.
        reason = str(err)
        self.last_write_error = reason
        self._owner.soon(self._notify_write_error, reason)

    def _notify_write_error(self, reason: str) -> None:
        if self.on_write_error is not None:
            try:
                self.on_write_error(reason)
            except Exception:
                log.exception("on_write_error callback failed")

    # ------------------------------------------------------------------ sessions

    async def create_session(
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
        """Create a session (id: 12 hex chars from uuid4 unless given; `parent_session_id`:
        the session whose subagent this is, G1) and return its row."""
        self._conn.check_open()
        return await self._sessions.create(
            model=model,
            provider=provider,
            workspace=workspace,
            title=title,
            session_id=session_id,
            metadata=metadata,
            parent_session_id=parent_session_id,
        )

    async def child_sessions(self, session_id: str) -> list[SessionRow]:
        """The sessions of the subagents `session_id` ran, oldest first (G1)."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.children(session_id)

    async def get_session(self, session_id: str) -> SessionRow | None:
        """The session's row with message_count, or None (token figures read through)."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.get(session_id)

    async def list_sessions(self, limit: int = 200) -> list[SessionRow]:
        """Sessions newest first by updated_at, each with message_count (display rows excluded)."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.newest(limit)

    async def count_sessions(self) -> int:
        """How many sessions are stored (what `list_sessions` may have left out)."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.count()

    async def latest_session_in(self, workspace: str) -> SessionRow | None:
        """The session last updated in `workspace` (`--continue`), or None."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.latest_in(workspace)

    async def spent_on_day(self, day: str | None = None) -> float:
        """USD every session spent on `day` (default: today, local time), queued counts in."""
        self._conn.check_open()
        await self._read_through()
        return await self._spend.on_day(day)

    async def usage_report(self, days: int = 30, today: str | None = None) -> list[UsageRow]:
        """Spend and tokens of the `days` days up to `today` (default: today, local time) by
        day, model and project ($2)."""
        self._conn.check_open()
        await self._read_through()
        return await self._spend.report(days, today)

    async def find_session(self, ref: str) -> SessionRow | None:
        """Exact id, else a unique id prefix, else the newest session whose title contains ref."""
        self._conn.check_open()
        await self._read_through()
        return await self._sessions.find(ref)

    async def update_session(self, session_id: str, **fields: Any) -> None:
        """Set session fields (title, model, provider, workspace, metadata dict, timestamps)."""
        self._conn.check_open()
        values = session_values(fields)
        if not values:
            return
        if FLUSH_FIRST_FIELDS & values.keys():
            await self.flush()
        await self._conn.write(lambda: self._sessions.update_tx(session_id, values))

    # ------------------------------------------------------------------ messages

    async def add_message(self, session_id: str, row: dict[str, Any]) -> int:
        """Append a message (seq = next in session), bump updated_at, return the message id."""
        self._conn.check_open()
        values = encode_message(row)
        return await self._conn.write(lambda: self._messages.insert_tx(session_id, values))

    async def load_messages(
        self, session_id: str, *, include_compacted: bool = True
    ) -> list[MessageRow]:
        """The session's messages in seq order, JSON fields decoded."""
        self._conn.check_open()
        return await self._messages.load(session_id, include_compacted=include_compacted)

    async def load_messages_page(
        self,
        session_id: str,
        *,
        before_seq: int | None = None,
        after_seq: int | None = None,
        limit: int = 100,
    ) -> list[MessageRow]:
        """Up to `limit` messages in seq order: the newest before `before_seq`, the oldest
        after `after_seq`, or the newest of the session with neither (a transcript window)."""
        self._conn.check_open()
        return await self._messages.page(
            session_id, before_seq=before_seq, after_seq=after_seq, limit=limit
        )

    async def load_blob(self, session_id: str, sha256: str) -> bytes | None:
        """The bytes of an image the session keeps (G4), or None when it has none by that hash."""
        self._conn.check_open()
        return await self._messages.blob(session_id, sha256)

    async def last_message_seq(self, session_id: str, role: str | None = None) -> int | None:
        """The seq of the session's newest message (of `role`, if given), or None."""
        self._conn.check_open()
        return await self._messages.last_seq(session_id, role)

    async def apply_compaction(
        self,
        session_id: str,
        *,
        compacted_ids: list[int],
        before_id: int | None,
        rows: list[dict[str, Any]],
        merge: tuple[int, str, dict[str, Any]] | None = None,
    ) -> list[int]:
        """Record a compaction in one transaction; return the ids of the inserted rows.

        The summarised rows stay (marked `compacted = 1`, still searchable); `rows` (the
        compaction marker and the summary) are inserted just before `before_id`, the first
        kept message, so `load_messages(include_compacted=False)` lists exactly what the model
        sees. `merge` = (id, content, display_metadata) rewrites the first kept row when the
        summary had to merge into it.
        """
        self._conn.check_open()
        await self.flush()
        encoded = [encode_message(r) for r in rows]
        merged = None if merge is None else (merge[0], merge[1], encode_metadata(merge[2]))
        return await self._conn.write(
            lambda: self._messages.compaction_tx(
                session_id,
                compacted_ids=compacted_ids,
                before_id=before_id,
                rows=encoded,
                merge=merged,
            )
        )

    # ------------------------------------------------------------------ checkpoints and branches

    def enqueue_checkpoint(
        self, session_id: str, row: dict[str, Any]
    ) -> concurrent.futures.Future[int]:
        """Queue a checkpoint row from any thread (behind the messages queued before it)."""
        return self._enqueue("checkpoint", session_id, lambda: checkpoint_values(row))

    def enqueue_checkpoint_update(
        self, session_id: str, key: str, **fields: Any
    ) -> concurrent.futures.Future[None]:
        """Queue a change of checkpoint `key` (its after-snapshot, the paths, undone)."""
        return self._enqueue(
            "checkpoint_update", session_id, lambda: (key, checkpoint_update_values(fields))
        )

    async def list_checkpoints(self, session_id: str) -> list[CheckpointRow]:
        """The session's checkpoints, oldest first (queued ones written first)."""
        self._conn.check_open()
        await self.flush()
        return await self._checkpoints.of_session(session_id)

    async def branch_session(
        self,
        session_id: str,
        seq: int,
        *,
        kind: str = "fork",
        move_later: bool = False,
        title: str | None = None,
    ) -> SessionRow:
        """A new session made from `session_id` at `seq`, with its lineage; see
        Checkpoints.branch_tx. Everything queued for the session is written first."""
        self._conn.check_open()
        await self.flush()
        new_id = await self._conn.write(
            lambda: self._checkpoints.branch_tx(
                session_id, seq, kind=kind, move_later=move_later, title=title
            )
        )
        session = await self._sessions.get(new_id)
        assert session is not None
        return session

    # ------------------------------------------------------------------ search

    async def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Full-text search over every session's messages, newest hit first.

        Each hit: session_id, title, updated_at, message_id, role, and a snippet of the
        message with the matched words in [ ]. Free text is safe (FTS5 syntax is quoted)."""
        return await search_messages(self._conn, query, limit)

    async def search_sessions(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Full-text search listing each matching session once, with its best-ranked message's
        snippet; the session with the newest match first (what the sessions panel shows)."""
        return await search_sessions(self._conn, query, limit)

    async def rebuild_search_index(self) -> int:
        """Drop and rebuild the full-text index from the messages; returns the rows indexed."""
        self._conn.check_open()
        await self.flush()
        async with self._conn.write_lock:
            return await self._conn.rebuild_index()

    # ------------------------------------------------------------------ token accounting

    def queue_token_counts(self, session_id: str, **usage: Any) -> None:
        """Queue one token/cost delta: an append and a notify on the caller (SPEC S2).

        Arguments: model, provider, route, input/output/cache_read/cache_write/reasoning
        tokens, api_calls (default 1), estimated_cost_usd, actual_cost_usd (None keeps the
        stored value), absolute=False (True: the figures are the new totals). Never blocks;
        a missing session id or a wrong keyword raises ValueError/TypeError at once, a value
        that cannot be converted is logged and dropped by the writer. After close() the
        delta is applied inline and raises StorageClosedError like the synchronous
        TokenAccounting.update_token_counts.
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

    # ------------------------------------------------------------------ queued writes

    def enqueue_message(
        self, session_id: str, row: dict[str, Any]
    ) -> concurrent.futures.Future[int]:
        """Queue add_message from any thread; the Future resolves to the message id."""
        return self._enqueue("message", session_id, lambda: encode_message(row))

    def enqueue_session_update(
        self, session_id: str, **fields: Any
    ) -> concurrent.futures.Future[None]:
        """Queue update_session from any thread; the Future resolves to None."""
        return self._enqueue("session_update", session_id, lambda: session_values(fields))

    def _enqueue(
        self, kind: str, session_id: str, prepare: Callable[[], Any]
    ) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            self._writer.submit(Op(kind, session_id, prepare(), fut))
        except Exception as exc:
            err = (
                exc
                if isinstance(exc, (StorageError, ValueError, TypeError))
                else self._conn.translate(exc)
            )
            log.warning("session write not queued: %s", err)
            fut.set_exception(err)
        return fut

    async def _apply_queued(self, op: Op) -> Any:
        """Apply one queued write inside the writer's open transaction."""
        if op.kind == "message":
            return await self._messages.insert_tx(op.session_id, op.payload)
        if op.kind == "session_update":
            return await self._sessions.update_tx(op.session_id, op.payload)
        if op.kind == "checkpoint":
            return await self._checkpoints.insert_tx(op.session_id, op.payload)
        if op.kind == "checkpoint_update":
            return await self._checkpoints.update_tx(*op.payload)
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
        if self._owner.is_current():
            raise RuntimeError("flush_threadsafe() on the owning loop's thread; await flush()")
        if not self._writer.idle:
            self.call(self._writer.flush, timeout=timeout)
        if tokens:
            self.accounting.flush_token_counts(timeout)

    def call(
        self,
        coro_fn: Callable[..., Coroutine[Any, Any, _T]],
        *args: Any,
        timeout: float = 30,
        **kwargs: Any,
    ) -> _T:
        """Run an async method of this db on the owning loop from another thread; return it."""
        return self._owner.run(coro_fn, args, kwargs, timeout)
