"""The typed rows: their keys are exactly what the store reads and writes."""

from __future__ import annotations

from storage.checkpoints import CheckpointRow
from storage.rows import MessageRow, MessageValues, SearchHit, SessionRow
from storage.schema import CHECKPOINT_COLUMNS, MESSAGE_COLUMNS, SESSION_COLUMNS


def test_row_types_name_exactly_the_columns():
    assert set(SessionRow.__annotations__) == {*SESSION_COLUMNS, "message_count"}
    assert set(MessageRow.__annotations__) == set(MESSAGE_COLUMNS) - {"session_id"}
    # `blobs`: a message's images, written to session_blobs beside the row (G4).
    values = set(MESSAGE_COLUMNS) - {"id", "session_id", "seq"} | {"blobs"}
    assert set(MessageValues.__annotations__) == values
    assert set(CheckpointRow.__annotations__) == set(CHECKPOINT_COLUMNS)


async def test_what_the_store_returns_has_the_typed_keys(db, session):
    sid = session["id"]
    assert set(session) == set(SessionRow.__annotations__)
    await db.add_message(sid, {"role": "user", "content": "typed rows", "reasoning": "dropped"})
    assert set((await db.load_messages(sid))[0]) == set(MessageRow.__annotations__)
    assert set((await db.load_messages_page(sid))[0]) == set(MessageRow.__annotations__)
    assert set((await db.list_sessions())[0]) == set(SessionRow.__annotations__)
    assert set((await db.search("typed"))[0]) == set(SearchHit.__annotations__)
