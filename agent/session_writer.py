"""The agent's side of the session store: queued writes, flushes, and the saving notices.

Writes are queued, never awaited, on the worker's path (S2, S8); a failure is told to the
user once, with its reason (S7), and writes held up by another process's lock are told
once as such: they are retried, not lost (H7).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.messages import Message
from agent.ports import SessionStore
from storage.errors import StorageLockedError, lock_wait_notice

if TYPE_CHECKING:
    from storage.rows import MessageRow, SessionRow

log = logging.getLogger("hermes_tui.agent")


class SessionWriter:
    """Queues a session's rows and token counts in the store and watches that they land.

    Every method is a no-op without a store or without a session id (a session that has
    not started yet, or an agent run with no database).
    """

    def __init__(
        self, store: SessionStore | None, notify: Callable[[ev.SavingFailed], None]
    ) -> None:
        self.store = store
        self._notify = notify
        self._told_not_saved = False
        self._told_saving_waits = False

    def persist(self, session_id: str | None, message: Message) -> None:
        """Queue `message`; its `db_id` is filled in once the row is written."""
        if self.store is None or session_id is None:
            return
        future = self.store.enqueue_message(session_id, message.to_row())

        def remember(done: Any, message: Message = message) -> None:
            if not done.cancelled() and done.exception() is None:
                message.db_id = done.result()

        future.add_done_callback(remember)
        self.check()

    # -- the few blocking calls (a session found, loaded, created; a compaction applied) ----
    def find_session(self, ref: str) -> SessionRow | None:
        """The stored session `ref` (an id, its prefix or a title) names, or None."""
        store = self._required()
        return store.call(store.find_session, ref)

    def load_messages(self, session_id: str) -> list[MessageRow]:
        """A stored session's rows the model may see (compacted ones left out)."""
        store = self._required()
        return store.call(store.load_messages, session_id, include_compacted=False)

    def load_blob(self, session_id: str | None, sha256: str) -> bytes | None:
        """An image's bytes the session keeps (after the queued writes), or None."""
        if self.store is None or session_id is None:
            return None
        self.store.flush_threadsafe(tokens=False)
        return self.store.call(self.store.load_blob, session_id, sha256)

    def create_session(self, **fields: Any) -> SessionRow:
        """A new session row (its model, provider, workspace and title), once it is written."""
        store = self._required()
        return store.call(store.create_session, **fields)

    def apply_compaction(self, session_id: str, **change: Any) -> list[int]:
        """Replace compacted rows by the summary in one transaction, after the queued writes;
        the ids of the rows written."""
        store = self._required()
        store.flush_threadsafe()
        return store.call(store.apply_compaction, session_id, **change)

    def spent_today(self) -> float:
        """USD every session spent today (local time), as the store holds it (0: no store)."""
        if self.store is None:
            return 0.0
        return self.store.call(self.store.spent_on_day)

    def _required(self) -> SessionStore:
        if self.store is None:
            raise ValueError("this needs a session store")
        return self.store

    def update_session(self, session_id: str | None, **fields: Any) -> None:
        """Queue a change of the session's row (its model, its heartbeat...)."""
        if self.store is not None and session_id is not None:
            self.store.enqueue_session_update(session_id, **fields)

    def queue_tokens(self, session_id: str | None, **delta: Any) -> None:
        """Queue one call's token and cost delta: an append and a notify (S2)."""
        if self.store is None or session_id is None:
            return
        try:  # after close it applies inline and may raise (S6)
            self.store.queue_token_counts(session_id, **delta)
        except Exception as exc:
            log.warning("token usage not saved: %s", exc)
        self.check()

    def flush(self, session_id: str | None, *, tokens: bool, when: str) -> None:
        """Wait for the queued writes (`tokens`: token counts too), unless a lock holds them.

        `when` names the moment in the log line of a failed flush.
        """
        if self.store is None or session_id is None:
            return
        if not self.saving_waits():
            try:
                self.store.flush_threadsafe(tokens=tokens)
            except Exception as exc:
                log.warning("flush %s failed: %s", when, exc)
        self.check()

    def saving_waits(self) -> bool:
        """True while queued writes wait behind another process's lock.

        Then a flush would only spend another lock window before it failed: the writer
        retries on its own, and the turn goes on without waiting for it (H7).
        """
        return bool(getattr(self.store, "waiting_for_lock", False))

    def check(self, reason: str | None = None) -> None:
        """Tell the user once, with the reason, that the session is not being saved (S7).

        Writes held up by a lock are not lost: that is said once too, as such (H7).
        `reason`: a failure the store just reported (else the store's last one).
        """
        store = self.store
        if store is not None and self.saving_waits():  # (it waits only with a store)
            if not self._told_saving_waits:
                self._told_saving_waits = True
                self._notify(ev.SavingFailed(lock_wait_notice(store.path), waiting=True))
            return
        reason = reason or getattr(store, "last_write_error", None)
        if reason == str(StorageLockedError(getattr(store, "path", ""))):
            return  # a lock that has cleared since: its writes were retried, not lost
        if reason and not self._told_not_saved:
            self._told_not_saved = True
            self._notify(ev.SavingFailed(f"This session is not being saved: {reason}"))
