"""The session schema as ordered migrations, applied by PRAGMA user_version.

Migration N (1-based) brings a database from user_version N-1 to N. Append new migrations;
never edit one that has shipped. Each migration is a tuple of single statements so it can run
inside one BEGIN IMMEDIATE transaction (executescript would commit behind our back).

Reasoning text has no column anywhere (SPEC R1): `reasoning_tokens` is a count only.
"""

from __future__ import annotations

_TOKEN_COLUMNS = """
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    api_call_count INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL,
    actual_cost_usd REAL"""

FTS_TABLE = """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, content='messages', content_rowid='id', tokenize='unicode61'
    )
"""
"""The full-text index of message text (storage/search_index.py rebuilds it from this)."""

FTS_FILL = (
    "INSERT INTO messages_fts(rowid, content)"
    " SELECT id, content FROM messages WHERE display_kind IS NULL"
)
"""Index every message the triggers would have indexed: display rows never are."""

_V1: tuple[str, ...] = (
    f"""
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        model TEXT,
        provider TEXT,
        workspace TEXT,
        created_at REAL,
        updated_at REAL,
        last_activity_at REAL,{_TOKEN_COLUMNS},
        metadata TEXT
    )
    """,
    "CREATE INDEX sessions_updated_at ON sessions(updated_at)",
    """
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        tool_calls TEXT,
        tool_call_id TEXT,
        name TEXT,
        display_kind TEXT,
        display_metadata TEXT,
        compacted INTEGER NOT NULL DEFAULT 0,
        created_at REAL
    )
    """,
    # Unique: seq is the replay order, two rows must never share a slot.
    "CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq)",
    f"""
    CREATE TABLE session_model_usage (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        model TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL DEFAULT '',
        route TEXT NOT NULL DEFAULT '',{_TOKEN_COLUMNS},
        PRIMARY KEY (session_id, model, provider, route)
    )
    """,
    # External-content FTS5: the text lives once, in messages; the index holds rowids.
    FTS_TABLE,
    # Display rows are not indexed. An external-content 'delete' must name exactly the values
    # that were indexed, so every trigger applies the same display_kind IS NULL rule.
    """
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
    WHEN new.display_kind IS NULL BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END
    """,
    """
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
    WHEN old.display_kind IS NULL BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        VALUES ('delete', old.id, old.content);
    END
    """,
    """
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, display_kind ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content)
        SELECT 'delete', old.id, old.content WHERE old.display_kind IS NULL;
        INSERT INTO messages_fts(rowid, content)
        SELECT new.id, new.content WHERE new.display_kind IS NULL;
    END
    """,
)

_V2: tuple[str, ...] = (
    # How many of `api_call_count`'s calls have estimated counts: a stopped or failed call
    # whose server sent no usage is counted from its request and the output streamed so far.
    "ALTER TABLE sessions ADD COLUMN estimated_calls INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE session_model_usage ADD COLUMN estimated_calls INTEGER NOT NULL DEFAULT 0",
)

_V3: tuple[str, ...] = (
    # A checkpoint: the workspace before the first change of a turn (`before_ref`) and at its
    # end (`after_ref`), commits of the shadow repository, linked to the user message that
    # caused it. `kind` 'restore' records a rewind or undo the same way, so a later rewind
    # can tell the agent's changes from edits made outside it (X2).
    """
    CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_id INTEGER REFERENCES messages(id) ON DELETE SET NULL,
        kind TEXT NOT NULL DEFAULT 'turn',
        workspace TEXT NOT NULL DEFAULT '',
        before_ref TEXT NOT NULL,
        after_ref TEXT,
        shell INTEGER NOT NULL DEFAULT 0,
        paths TEXT,
        undone INTEGER NOT NULL DEFAULT 0,
        created_at REAL
    )
    """,
    "CREATE INDEX checkpoints_session ON checkpoints(session_id, id)",
    # Lineage: a fork or a rewound branch names the session it came from and the seq it
    # was taken at (`branch_kind`: fork | rewind).
    "ALTER TABLE sessions ADD COLUMN parent_id TEXT",
    "ALTER TABLE sessions ADD COLUMN fork_seq INTEGER",
    "ALTER TABLE sessions ADD COLUMN branch_kind TEXT",
)

_V4: tuple[str, ...] = (
    # An image a message carries (G4), kept once per session however many messages and
    # requests carry it: rows reference it by sha256 in their display metadata.
    """
    CREATE TABLE session_blobs (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        sha256 TEXT NOT NULL,
        media_type TEXT NOT NULL,
        data BLOB NOT NULL,
        created_at REAL,
        PRIMARY KEY (session_id, sha256)
    )
    """,
)

_V5: tuple[str, ...] = (
    # A subagent's session (G1) names the session whose `task` call ran it. Not `parent_id`:
    # that is a branch the user goes on with (fork, rewind); a child is part of its
    # parent's turn, listed under it, never on its own.
    "ALTER TABLE sessions ADD COLUMN parent_session_id TEXT",
    "CREATE INDEX sessions_parent_session ON sessions(parent_session_id)",
)

_V6: tuple[str, ...] = (
    # Spend by local calendar day ($2): the day cap sums it across every session, and the
    # usage view reads it by day, model and project. No foreign key: spent money stays spent
    # when its session is deleted.
    f"""
    CREATE TABLE usage_by_day (
        day TEXT NOT NULL,
        session_id TEXT NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL DEFAULT '',
        route TEXT NOT NULL DEFAULT '',{_TOKEN_COLUMNS},
        estimated_calls INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, session_id, model, provider, route)
    )
    """,
    # What was stored before: each session's usage on the day it was last updated.
    """
    INSERT INTO usage_by_day (day, session_id, model, provider, route, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, api_call_count,
        estimated_cost_usd, actual_cost_usd, estimated_calls)
    SELECT date(coalesce(s.updated_at, s.created_at, 0), 'unixepoch', 'localtime'),
        u.session_id, u.model, u.provider, u.route, u.input_tokens, u.output_tokens,
        u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens, u.api_call_count,
        u.estimated_cost_usd, u.actual_cost_usd, u.estimated_calls
    FROM session_model_usage u LEFT JOIN sessions s ON s.id = u.session_id
    """,
)

MIGRATIONS: list[tuple[str, ...]] = [_V1, _V2, _V3, _V4, _V5, _V6]
"""Ordered migrations; index i brings user_version i to i + 1."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The user_version a database has once every migration is applied."""

SESSION_COLUMNS = (
    "id",
    "title",
    "model",
    "provider",
    "workspace",
    "created_at",
    "updated_at",
    "last_activity_at",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
    "estimated_cost_usd",
    "actual_cost_usd",
    "metadata",
    "estimated_calls",
    "parent_id",
    "fork_seq",
    "branch_kind",
    "parent_session_id",
)

CHECKPOINT_COLUMNS = (
    "id",
    "key",
    "session_id",
    "message_id",
    "kind",
    "workspace",
    "before_ref",
    "after_ref",
    "shell",
    "paths",
    "undone",
    "created_at",
)

MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "seq",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "display_kind",
    "display_metadata",
    "compacted",
    "created_at",
)

USAGE_COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_calls",
)
