"""A damaged full-text index: reported as such, rebuilt from the messages, never a crash."""

from __future__ import annotations

import sqlite3

import pytest

from storage import SessionDB, StorageCorruptError, StorageIndexCorruptError
from storage.errors import is_index_damaged

# Ways the index's shadow tables break; each makes FTS5 fail in a different way.
DAMAGE = {
    "blocks": "UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10",
    "structure": "DELETE FROM messages_fts_data WHERE id = 10",
    "config": "UPDATE messages_fts_config SET v = 99 WHERE k = 'version'",
    "table": "DROP TABLE messages_fts_data",
}


async def filled(path, count: int = 30) -> tuple[SessionDB, str]:
    db = await SessionDB.open(path)
    sid = (await db.create_session(model="m", provider="p", workspace="/w"))["id"]
    for i in range(count):
        await db.add_message(sid, {"role": "user", "content": f"apple number {i}"})
    await db.add_message(sid, {"role": "assistant", "display_kind": "note", "content": "apple"})
    return db, sid


async def damaged(db: SessionDB, how: str) -> SessionDB:
    """Damage db's index the way a bad disk would, while db is closed; db opened again."""
    await db.close()
    conn = sqlite3.connect(db.path)
    conn.execute(DAMAGE[how])
    conn.commit()
    conn.close()
    return await SessionDB.open(db.path)


@pytest.mark.parametrize("how", sorted(DAMAGE))
async def test_search_on_a_damaged_index_says_so_and_a_rebuild_fixes_it(tmp_path, how):
    db, sid = await filled(tmp_path / "state.db")
    db = await damaged(db, how)
    with pytest.raises(StorageIndexCorruptError) as info:
        await db.search("apple")
    assert str(db.path) in str(info.value) and "hermes-tui sessions reindex" in str(info.value)
    assert len(await db.load_messages(sid)) == 31, "the messages themselves still read"
    assert await db.rebuild_search_index() == 30, "display rows are not indexed"
    assert len(await db.search("apple", limit=100)) == 30
    conn = sqlite3.connect(db.path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    await db.close()


@pytest.mark.parametrize("how", ["structure", "config", "table"])
async def test_a_write_the_damaged_index_refuses_rebuilds_it_and_lands(tmp_path, how):
    db, sid = await filled(tmp_path / "state.db")
    db = await damaged(db, how)
    queued = db.enqueue_message(sid, {"role": "user", "content": "queued banana"})
    await db.flush()
    direct = await db.add_message(sid, {"role": "user", "content": "direct banana"})
    assert isinstance(queued.result(), int) and direct > queued.result()
    assert db.last_write_error is None, "nothing failed: the index was rebuilt first"
    assert [hit["message_id"] for hit in await db.search("banana")] == [direct, queued.result()]
    await db.close()


async def test_a_half_finished_rebuild_is_finished_by_the_next_write(tmp_path):
    # A crash between the two steps of the rebuild leaves triggers naming a missing table.
    db, sid = await filled(tmp_path / "state.db", count=3)
    await db.close()
    conn = sqlite3.connect(db.path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts'")
    conn.commit()
    conn.close()
    db = await SessionDB.open(db.path)
    await db.add_message(sid, {"role": "user", "content": "cherry"})
    assert len(await db.search("cherry")) == 1
    assert len(await db.search("apple")) == 3
    await db.close()


async def test_an_index_that_breaks_again_is_reported_not_rebuilt_forever(tmp_path):
    db, sid = await filled(tmp_path / "state.db", count=3)
    db = await damaged(db, "structure")
    repaired = db.enqueue_message(sid, {"role": "user", "content": "rebuilt first"})
    await db.flush()
    assert isinstance(repaired.result(), int)
    conn = sqlite3.connect(db.path)  # it breaks again under the same open database
    conn.execute(DAMAGE["structure"])
    conn.commit()
    conn.close()
    again = db.enqueue_message(sid, {"role": "user", "content": "again"})
    await db.flush()
    assert isinstance(again.exception(), StorageIndexCorruptError)
    assert "search index" in db.last_write_error and "reindex" in db.last_write_error
    await db.close()


async def test_a_query_fts5_objects_to_is_no_hits_not_damage(db, session):
    await db.add_message(session["id"], {"role": "user", "content": "hello"})
    assert not is_index_damaged(sqlite3.OperationalError('fts5: syntax error near "\'"'))
    assert await db.search('" OR NEAR( hello ^ *') == []
    assert [hit["role"] for hit in await db.search("hello")] == ["user"]


async def test_reads_of_a_corrupt_file_raise_the_sentence_not_sqlite3(tmp_path):
    db, sid = await filled(tmp_path / "state.db", count=200)
    await db.close()
    data = bytearray(db.path.read_bytes())
    page = 4096
    data[2 * page : 6 * page] = b"\xff" * (4 * page)  # table pages, not the header
    db.path.write_bytes(bytes(data))
    db = await SessionDB.open(db.path)
    with pytest.raises(StorageCorruptError, match="move it aside"):
        for _ in range(3):
            await db.load_messages(sid)
            await db.list_sessions()
    await db.close()
