"""The seams of the agent: what it needs from a session store, an approver and its host.

Each Protocol lists exactly what the agent calls, so a test double, the TUI's approval
dialog or another store only has to provide that much. `storage.SessionDB` is the store the
app uses; the provider seam is `agent.providers.base.Provider`.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from agent.config import Config
    from agent.events import Sink
    from agent.kinds import CallPurpose
    from agent.messages import Message
    from agent.providers.base import ChatRequest, Provider, UsagePart
    from agent.session_state import SessionState
    from agent.session_writer import SessionWriter
    from agent.tools.approvals import Verdict
    from agent.tools.registry import ApprovalRequest
    from agent.usage import UsageRecorder
    from storage.checkpoints import CheckpointRow
    from storage.rows import MessageRow, SessionRow

T = TypeVar("T")


class SessionStore(Protocol):
    """The session database as the agent uses it, from its worker thread.

    Blocking reads and the compaction commit go through `call` (the store's own event loop
    runs them); messages, session updates and token counts are queued without waiting.
    """

    path: Path
    last_write_error: str | None
    """Why the last queued write failed, or None (S7)."""

    @property
    def waiting_for_lock(self) -> bool:
        """True while queued writes wait for another process's lock (H7)."""
        ...

    def call(
        self,
        coro_fn: Callable[..., Coroutine[Any, Any, T]],
        *args: Any,
        timeout: float = 30,
        **kwargs: Any,
    ) -> T:
        """Run one of the async methods below on the store's loop; block for its result."""
        ...

    async def create_session(
        self,
        *,
        model: str,
        provider: str,
        workspace: str,
        title: str = "",
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> SessionRow:
        """Create a session and return its row (with its `id`); a subagent's names its
        parent's (G1)."""
        ...

    async def spent_on_day(self, day: str | None = None) -> float:
        """USD every session spent on `day` (default: today, local time) ($2)."""
        ...

    async def find_session(self, ref: str) -> SessionRow | None:
        """The session whose id or title matches `ref`, or None."""
        ...

    async def load_messages(
        self, session_id: str, *, include_compacted: bool = True
    ) -> list[MessageRow]:
        """The stored rows of a session, in order."""
        ...

    async def load_blob(self, session_id: str, sha256: str) -> bytes | None:
        """The bytes of an image the session keeps, or None."""
        ...

    async def apply_compaction(
        self,
        session_id: str,
        *,
        compacted_ids: list[int],
        before_id: int | None,
        rows: list[dict[str, Any]],
        merge: tuple[int, str, dict[str, Any]] | None = None,
    ) -> list[int]:
        """Record a compaction in one transaction; the ids of the inserted rows (C5)."""
        ...

    def enqueue_message(
        self, session_id: str, row: dict[str, Any]
    ) -> concurrent.futures.Future[int]:
        """Queue a message row; the Future resolves to its id."""
        ...

    def enqueue_session_update(
        self, session_id: str, **fields: Any
    ) -> concurrent.futures.Future[None]:
        """Queue a change of the session's row (model, heartbeat...)."""
        ...

    def queue_token_counts(self, session_id: str, **usage: Any) -> None:
        """Queue one call's token and cost delta (S2)."""
        ...

    def flush_threadsafe(self, timeout: float = 30, *, tokens: bool = True) -> None:
        """Block until what was queued before is written (S4, S6)."""
        ...

    def enqueue_checkpoint(
        self, session_id: str, row: dict[str, Any]
    ) -> concurrent.futures.Future[int]:
        """Queue a checkpoint row (X2)."""
        ...

    def enqueue_checkpoint_update(
        self, session_id: str, key: str, **fields: Any
    ) -> concurrent.futures.Future[None]:
        """Queue a change of a checkpoint (its after-snapshot, paths, undone)."""
        ...

    async def list_checkpoints(self, session_id: str) -> list[CheckpointRow]:
        """The session's checkpoints, oldest first."""
        ...


ApprovalPolicy = Callable[["ApprovalRequest"], "bool | Verdict"]
"""Asks the user about one tool call; blocks the worker until they answer (H2).

A plain bool is a yes or no; a `Verdict` can also say "always" and carry a reason for a no.
"""


class CompactionHost(Protocol):
    """What context compaction needs from the agent whose conversation it compacts."""

    sink: Sink
    writer: SessionWriter
    """The session's writes; the compaction commit goes through it (the store's one door)."""
    state: SessionState
    """The session: its todo list goes on after a compaction word for word (N2)."""
    config: Config
    usage_recorder: UsageRecorder
    """The session's totals and spend caps: a summary call is held to them too ($2)."""
    approve: ApprovalPolicy | None

    @property
    def provider_name(self) -> str:
        """The provider part of the current model reference."""
        ...

    @property
    def model_name(self) -> str:
        """The model part of the current model reference."""
        ...

    @property
    def session_id(self) -> str | None:
        """The session's id (None before its first turn)."""
        ...

    @property
    def parent(self) -> CompactionHost | None:
        """The agent whose `task` call runs this one (a subagent: its calls are held to that
        session's spend caps, G1, $2), else None."""
        ...

    @property
    def messages(self) -> list[Message]:
        """The conversation as the model will see it next (display rows included)."""
        ...

    @property
    def context_window(self) -> int | None:
        """The current model's context window (None: nobody knows it)."""
        ...

    def request(self) -> ChatRequest:
        """The next model call as it would be sent now."""
        ...

    def provider(self) -> Provider:
        """The adapter of the current model's provider."""
        ...

    def replace_messages(self, messages: list[Message]) -> None:
        """Make `messages` the conversation (a compaction committed)."""
        ...

    def touch(self) -> None:
        """Record progress on the activity clock (L1)."""
        ...

    def record_usage(self, usage: UsagePart, purpose: CallPurpose) -> None:
        """Account one model call of the session (its totals, the store, the event)."""
        ...
