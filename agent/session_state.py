"""The conversation an agent is in, as one value with one reset (D3).

A new session and a stored one attached from its rows differ only in what they start
from; both go through `SessionState.of`, so no field can be forgotten on one path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.messages import Message, ToolCallIds, mark_withheld
from agent.todos import TODOS_KEY, TodoList

StoredRow = Mapping[str, Any]
"""A stored row as the agent reads it (storage's row TypedDicts are such mappings)."""

COOLDOWN_KEY = "compaction_cooldown"
"""The session metadata key that keeps compaction's cooldown across runs (C3)."""


@dataclass
class SessionState:
    """The session's id (None until the first turn creates it), the conversation the model
    will see, the session row's metadata, and the tool-call ids handed out in it."""

    session_id: str | None = None
    messages: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    ids: ToolCallIds = field(default_factory=ToolCallIds)
    todos: TodoList = field(default_factory=TodoList)
    """The model's todo list as last written (kept in the metadata, N2)."""

    @classmethod
    def of(
        cls,
        session_id: str | None = None,
        rows: Sequence[StoredRow] = (),
        session: StoredRow | None = None,
    ) -> SessionState:
        """The state of a stored session from its persisted rows and row (none: a new one)."""
        # Compacted rows are history for the transcript, never for the model (C, D3).
        messages = [Message.from_row(r) for r in rows if not r.get("compacted")]
        mark_withheld(messages)
        metadata = dict((session or {}).get("metadata") or {})
        todos = TodoList.stored(metadata.get(TODOS_KEY))
        return cls(session_id, messages, metadata, ToolCallIds.from_history(messages), todos)

    def keep(self, key: str, value: Any) -> dict[str, Any]:
        """Set (None: drop) one metadata key; the metadata as the session row should hold it."""
        if value is None:
            self.metadata.pop(key, None)
        else:
            self.metadata[key] = value
        return dict(self.metadata)

    @property
    def cooldown(self) -> Any:
        """Compaction's stored cooldown (C3), or None."""
        return self.metadata.get(COOLDOWN_KEY)


def title_of(first_text: str) -> str:
    """A new session's title: its first message on one line, cut to 60 characters."""
    return " ".join(first_text.split())[:60]
