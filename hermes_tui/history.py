"""A stored session as the transcript reads it: its rows, page by page, and what the agent
wrote into them (tool summaries, compaction summaries, the recovery note) (D3, U5)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent import outside_json
from hermes_tui.widgets.transcript import Note, UserView

if TYPE_CHECKING:
    from agent.tools.registry import ToolRegistry
    from storage.db import SessionDB
    from storage.rows import MessageRow


class SessionHistory:
    """The transcript's HistorySource over the session database, for the current session."""

    def __init__(self, db: SessionDB, session_id: Callable[[], str | None]) -> None:
        self.db = db
        self.session_id = session_id

    async def page(
        self, *, before_seq: int | None = None, after_seq: int | None = None, limit: int
    ) -> list[MessageRow]:
        """Rows of the current session next to a seq (see SessionDB.load_messages_page)."""
        session_id = self.session_id()
        if session_id is None:
            return []
        return await self.db.load_messages_page(
            session_id, before_seq=before_seq, after_seq=after_seq, limit=limit
        )

    async def last_user_seq(self) -> int | None:
        """The seq of the current session's newest stored user row (None: not stored yet)."""
        from storage.errors import StorageError

        session_id = self.session_id()
        if session_id is None:
            return None
        try:
            await self.db.flush()
            return await self.db.last_message_seq(session_id, role="user")
        except StorageError:
            # Its writes wait behind a lock (H7), or the app is closing the database under
            # it: the turn stays live, unpaged, on screen.
            return None


class AgentRows:
    """The transcript's RowReader: the agent's own vocabulary for what a stored row holds."""

    def __init__(self, registry: ToolRegistry) -> None:
        # The agent's tool registry, built once: a stored call is summarised as a live one is.
        self._registry = registry

    def tool_summary(self, name: str, arguments: Any) -> str:
        """The one-line summary of a stored tool call, as the agent shows a live one."""
        if isinstance(arguments, str):
            try:
                arguments = outside_json.loads_object(arguments)
            except ValueError:
                arguments = {}
        return self._registry.summary(name, arguments if isinstance(arguments, dict) else {})

    def note(self, row: Mapping[str, Any]) -> Note | None:
        """A text row's typed part (a compaction summary, a recovery note), if it has one.

        The model reads these rows as plain text; the user did not type them, so they render
        as notes. A summary merged into the first kept message is its first `summary_chars`.
        """
        meta = row.get("display_metadata")
        if not isinstance(meta, dict):
            return None
        from agent.compaction import SUMMARY_KEY
        from agent.recovery import NOTE_KIND_KEY, RECOVERY_NOTE_KIND
        from agent.turn_hooks import HOOK_NOTE_KIND

        content = row.get("content") or ""
        summary = meta.get(SUMMARY_KEY)
        if summary == "standalone":
            return Note("summary", summary_body(content), "", own_row=True)
        chars = meta.get("summary_chars")
        if summary == "merged" and isinstance(chars, int) and 0 < chars <= len(content):
            rest = content[chars:].lstrip("\n")
            return Note("summary", summary_body(content[:chars]), rest, own_row=False)
        if row.get("role") == "user" and meta.get(NOTE_KIND_KEY) == RECOVERY_NOTE_KIND:
            return Note("recovery", "", "", own_row=False)
        if row.get("role") == "user" and meta.get(NOTE_KIND_KEY) == HOOK_NOTE_KIND:
            # A turn_end hook's feedback: its ◈ hook row above already says so (N4).
            return Note("hook", "", "", own_row=False)
        return None

    def user_view(self, row: Mapping[str, Any]) -> UserView | None:
        """A user row whose model text is not what the user typed: mentions attached (P2),
        or a custom command's prompt (P3); the typed text and the attachments show."""
        from agent.attachments import ATTACHMENTS_KEY, SHOWN_KEY

        meta = row.get("display_metadata")
        if row.get("role") != "user" or not isinstance(meta, dict) or SHOWN_KEY not in meta:
            return None
        attachments = meta.get(ATTACHMENTS_KEY)
        if not isinstance(attachments, list):
            attachments = []
        kept = tuple(item for item in attachments if isinstance(item, dict))
        return UserView(str(meta[SHOWN_KEY]), kept)


def summary_body(text: str) -> str:
    """The summary without the header and footer lines the model needs and the user does not."""
    from agent.compaction import SUMMARY_FOOTER, SUMMARY_HEADER

    frame = (SUMMARY_HEADER, SUMMARY_FOOTER)
    lines = [line for line in text.strip().splitlines() if line.strip() not in frame]
    return "\n".join(lines).strip()
