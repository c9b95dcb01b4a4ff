"""The rows the store hands out and takes in, and their column encoding.

Rows are TypedDicts: at run time plain dicts (every caller's `row["title"]` keeps working),
to a type checker a named shape. JSON columns are decoded on the way out and encoded, from a
snapshot of the caller's dict, on the way in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, TypedDict

import aiosqlite


class SessionRow(TypedDict):
    """A session as get_session/list_sessions return it: its columns and message count."""

    id: str
    title: str
    model: str | None
    provider: str | None
    workspace: str | None
    created_at: float | None
    updated_at: float | None
    last_activity_at: float | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    api_call_count: int
    estimated_cost_usd: float | None
    actual_cost_usd: float | None
    metadata: dict[str, Any]
    parent_id: str | None  # the session this one was forked or rewound from
    fork_seq: int | None  # the parent's seq it was taken at
    branch_kind: str | None  # fork | rewind
    parent_session_id: str | None  # the session whose `task` call ran this subagent (G1)
    estimated_calls: int  # of api_call_count, the calls whose counts are estimates
    message_count: int  # conversation messages: display rows are not counted


class MessageRow(TypedDict):
    """A stored message as load_messages returns it, JSON fields decoded."""

    id: int
    seq: int
    role: str
    content: str
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    name: str | None
    display_kind: str | None
    display_metadata: dict[str, Any] | None
    compacted: bool
    created_at: float | None


class MessageValues(TypedDict):
    """A message's column values, encoded: the parameters of the one INSERT (messages.py)."""

    role: str
    content: str
    tool_calls: str | None
    tool_call_id: str | None
    name: str | None
    display_kind: str | None
    display_metadata: str | None
    compacted: int
    created_at: float
    blobs: list[tuple[str, str, bytes]]
    """The images the message carries: (sha256, media type, bytes), kept once per session."""


class SearchHit(TypedDict):
    """One full-text search hit: where it is, and a snippet with the matched words in [ ]."""

    session_id: str
    title: str
    updated_at: float | None
    message_id: int
    role: str
    snippet: str


UPDATABLE_SESSION_FIELDS = frozenset(
    {"title", "model", "provider", "workspace", "metadata", "created_at", "updated_at",
     "last_activity_at"}
)  # fmt: skip
"""The session fields update_session may set (token figures belong to the accounting)."""

FLUSH_FIRST_FIELDS = frozenset({"model", "provider", "metadata"})
"""Session fields whose change must not be overtaken by an older queued write (SPEC S5)."""


def encode_message(row: dict[str, Any]) -> MessageValues:
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
        "display_metadata": encode_metadata(display_metadata),
        "compacted": 1 if row.get("compacted") else 0,
        "created_at": row.get("created_at") or time.time(),
        "blobs": [_blob(item) for item in row.get("blobs") or ()],
    }


def _blob(item: Any) -> tuple[str, str, bytes]:
    sha256, media_type, data = item
    if not (isinstance(sha256, str) and isinstance(media_type, str) and isinstance(data, bytes)):
        raise TypeError("a message blob is (sha256 text, media type text, bytes)")
    return sha256, media_type, data


def encode_metadata(value: dict[str, Any] | None) -> str | None:
    """A metadata dict as its JSON column; None stays NULL."""
    return json.dumps(value) if value is not None else None


def session_values(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, encoded column values of a session update; ValueError names unknown fields."""
    unknown = set(fields) - UPDATABLE_SESSION_FIELDS
    if unknown:
        raise ValueError(
            f"unknown session field(s) {sorted(unknown)}; "
            f"allowed: {sorted(UPDATABLE_SESSION_FIELDS)}"
        )
    values = dict(fields)
    if "metadata" in values:
        values["metadata"] = encode_metadata(values["metadata"])
    return values


def session_row(row: aiosqlite.Row) -> SessionRow:
    """A sessions row (with message_count) as a SessionRow, metadata decoded ({} for none)."""
    out = dict(row)
    raw = out.get("metadata")
    out["metadata"] = json.loads(raw) if raw else {}
    return out  # type: ignore[return-value]


def message_row(row: aiosqlite.Row) -> MessageRow:
    """A messages row as a MessageRow: tool calls and display metadata decoded."""
    out = dict(row)
    out["tool_calls"] = json.loads(out["tool_calls"]) if out["tool_calls"] else None
    raw = out["display_metadata"]
    out["display_metadata"] = json.loads(raw) if raw is not None else None
    out["compacted"] = bool(out["compacted"])
    return out  # type: ignore[return-value]
