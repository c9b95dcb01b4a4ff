"""SessionDB direct API: sessions, messages, FTS search, usage accounting."""

from __future__ import annotations

import sqlite3

import pytest

from storage import SessionDB, StorageClosedError, UnknownSessionError


async def test_create_session_defaults(db):
    s = await db.create_session(model="m", provider="p", workspace="/w")
    assert len(s["id"]) == 12 and int(s["id"], 16) >= 0
    assert s["title"] == "" and s["message_count"] == 0 and s["metadata"] == {}
    assert s["input_tokens"] == 0 and s["estimated_cost_usd"] is None
    given = await db.create_session(model="m", provider="p", workspace="/w", session_id="abc")
    assert given["id"] == "abc"


async def test_list_sessions_newest_first_with_message_count(db):
    a = await db.create_session(model="m", provider="p", workspace="/w", title="a")
    b = await db.create_session(model="m", provider="p", workspace="/w", title="b")
    c = await db.create_session(model="m", provider="p", workspace="/w", title="c")
    await db.add_message(a["id"], {"role": "user", "content": "hi"})
    await db.add_message(a["id"], {"role": "model_switch_note", "display_kind": "model_switch"})
    listed = await db.list_sessions()
    assert [s["id"] for s in listed] == [a["id"], c["id"], b["id"]]
    assert listed[0]["message_count"] == 1  # display rows are not conversation messages
    assert len(await db.list_sessions(limit=2)) == 2


async def test_find_session_by_id_prefix_and_title(db):
    one = await db.create_session(
        model="m", provider="p", workspace="/w", title="Fix flaky test", session_id="aaa111"
    )
    two = await db.create_session(
        model="m", provider="p", workspace="/w", title="Refactor", session_id="aab222"
    )
    three = await db.create_session(
        model="m", provider="p", workspace="/w", title="another flaky thing", session_id="c_%"
    )
    assert (await db.find_session("aaa111"))["id"] == one["id"]
    assert (await db.find_session("aab"))["id"] == two["id"]
    assert (await db.find_session("refac"))["id"] == two["id"]
    # "aa" is an ambiguous prefix and no title contains it.
    assert await db.find_session("aa") is None
    # Title match picks the newest; LIKE wildcards in the ref are literal.
    assert (await db.find_session("FLAKY"))["id"] == three["id"]
    assert (await db.find_session("c_%"))["id"] == three["id"]
    assert await db.find_session("c%") is None
    assert await db.find_session("") is None


async def test_update_session_fields_and_unknown_field(db, session):
    await db.update_session(session["id"], title="New", model="m2", metadata={"k": [1, 2]})
    got = await db.get_session(session["id"])
    assert (got["title"], got["model"], got["metadata"]) == ("New", "m2", {"k": [1, 2]})
    with pytest.raises(ValueError, match="unknown session field"):
        await db.update_session(session["id"], input_tokens=4)
    with pytest.raises(UnknownSessionError):
        await db.update_session("missing", title="x")


async def test_add_message_assigns_seq_and_round_trips(db, session):
    sid = session["id"]
    rows = [
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "call_1", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "file text", "tool_call_id": "call_1", "name": "read_file"},
        {
            "role": "assistant",
            "content": "◈ model changed",
            "display_kind": "model_switch",
            "display_metadata": {"from": "a", "to": "b"},
        },
        {"role": "assistant", "content": "done", "reasoning": "never stored", "compacted": True},
    ]
    ids = [await db.add_message(sid, r) for r in rows]
    assert ids == sorted(ids)
    loaded = await db.load_messages(sid)
    assert [m["seq"] for m in loaded] == [1, 2, 3, 4, 5]
    assert [m["id"] for m in loaded] == ids
    assert loaded[1]["tool_calls"][0]["id"] == "call_1"
    assert loaded[0]["tool_calls"] is None
    assert loaded[2]["tool_call_id"] == "call_1" and loaded[2]["name"] == "read_file"
    assert loaded[3]["display_kind"] == "model_switch"
    assert loaded[3]["display_metadata"] == {"from": "a", "to": "b"}
    assert loaded[4]["compacted"] is True and "reasoning" not in loaded[4]
    assert [m["seq"] for m in await db.load_messages(sid, include_compacted=False)] == [1, 2, 3, 4]
    assert (await db.get_session(sid))["updated_at"] >= session["updated_at"]


async def test_add_message_to_missing_session_raises(db):
    with pytest.raises(UnknownSessionError, match="does not exist"):
        await db.add_message("nope", {"role": "user", "content": "x"})


async def test_search_across_sessions_with_snippets(db):
    a = await db.create_session(model="m", provider="p", workspace="/w", title="alpha")
    b = await db.create_session(model="m", provider="p", workspace="/w", title="beta")
    await db.add_message(a["id"], {"role": "user", "content": "the parser crashes on unicode"})
    await db.add_message(b["id"], {"role": "assistant", "content": "unicode parser fixed now"})
    await db.add_message(b["id"], {"role": "user", "content": "nothing relevant"})
    await db.add_message(
        b["id"], {"role": "assistant", "content": "parser unicode marker", "display_kind": "hidden"}
    )
    hits = await db.search("unicode parser")
    assert {h["session_id"] for h in hits} == {a["id"], b["id"]}
    assert len(hits) == 2  # the display row is not indexed
    for hit in hits:
        assert "[unicode]" in hit["snippet"] and "[parser]" in hit["snippet"]
        assert set(hit) >= {"session_id", "title", "updated_at", "message_id", "role", "snippet"}
    assert {h["title"] for h in hits} == {"alpha", "beta"}
    assert await db.search("zebra") == []
    assert len(await db.search("unicode", limit=1)) == 1


@pytest.mark.parametrize(
    "query",
    ['foo"bar', "AND", "*", "(", ")", "OR NOT", "NEAR(", 'a"', "col:x", "^", "-x", "", "  "],
)
async def test_search_survives_fts_syntax(db, session, query):
    await db.add_message(session["id"], {"role": "user", "content": 'foo"bar AND (x) * ^'})
    result = await db.search(query)
    assert isinstance(result, list)


async def test_search_quoted_text_still_matches(db, session):
    await db.add_message(session["id"], {"role": "user", "content": 'he said foo"bar loudly'})
    assert len(await db.search('foo"bar')) == 1


async def test_fts_in_step_after_update_and_delete(db):
    a = await db.create_session(model="m", provider="p", workspace="/w")
    b = await db.create_session(model="m", provider="p", workspace="/w")
    mid = await db.add_message(a["id"], {"role": "user", "content": "pineapple pizza"})
    await db.add_message(b["id"], {"role": "user", "content": "pineapple juice"})
    await db.add_message(a["id"], {"role": "assistant", "content": "x", "display_kind": "hidden"})

    # A direct UPDATE (as a compaction rewrite would do) re-indexes the row.
    await db._conn.write(
        lambda: db._conn.execute("UPDATE messages SET content = 'mango pizza' WHERE id = ?", (mid,))
    )
    assert [h["message_id"] for h in await db.search("mango")] == [mid]
    assert {h["session_id"] for h in await db.search("pineapple")} == {b["id"]}

    # Deleting a session (another process's clean-up) takes its messages out of the index.
    conn = sqlite3.connect(db.path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM sessions WHERE id = ?", (a["id"],))
    conn.commit()
    conn.close()
    assert await db.search("mango") == []
    assert await db.search("pizza") == []
    assert len(await db.search("pineapple")) == 1
    assert await db.load_messages(a["id"]) == []
    # The external-content index agrees with its table.
    await db._conn.write(
        lambda: db._conn.execute(
            "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"
        )
    )


def usage_rows(path, session_id: str) -> dict[tuple[str, str, str], dict]:
    """The session's session_model_usage rows by (model, provider, route), read from the file."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT * FROM session_model_usage WHERE session_id = ?", (session_id,)
        ).fetchall()
    finally:
        conn.close()
    return {(r["model"], r["provider"], r["route"]): dict(r) for r in found}


async def test_token_counts_sum_and_keep_costs_when_none(db, session):
    sid = session["id"]
    db.queue_token_counts(sid, model="gpt", provider="openai", input_tokens=10, output_tokens=5)
    s = await db.get_session(sid)
    assert (s["input_tokens"], s["output_tokens"], s["api_call_count"]) == (10, 5, 1)
    assert s["estimated_cost_usd"] is None and s["actual_cost_usd"] is None

    db.queue_token_counts(sid, model="gpt", provider="openai", estimated_cost_usd=0.25)
    db.queue_token_counts(sid, model="gpt", provider="openai", input_tokens=1)  # None keeps 0.25
    db.queue_token_counts(
        sid, model="gpt", provider="openai", estimated_cost_usd=0.5, actual_cost_usd=0.4
    )
    db.queue_token_counts(
        sid,
        model="claude",
        provider="anthropic",
        route="direct",
        cache_read_tokens=7,
        cache_write_tokens=3,
        reasoning_tokens=2,
        api_calls=2,
        actual_cost_usd=1.0,
    )
    s = await db.get_session(sid)
    assert s["input_tokens"] == 11 and s["api_call_count"] == 6
    assert s["estimated_cost_usd"] == pytest.approx(0.75)
    assert s["actual_cost_usd"] == pytest.approx(1.4)
    assert (s["cache_read_tokens"], s["cache_write_tokens"], s["reasoning_tokens"]) == (7, 3, 2)

    rows = usage_rows(db.path, sid)
    assert set(rows) == {("gpt", "openai", ""), ("claude", "anthropic", "direct")}
    gpt = rows["gpt", "openai", ""]
    assert (gpt["input_tokens"], gpt["api_call_count"]) == (11, 4)
    assert gpt["estimated_cost_usd"] == pytest.approx(0.75)
    assert gpt["actual_cost_usd"] == pytest.approx(0.4)
    claude = rows["claude", "anthropic", "direct"]
    assert claude["estimated_cost_usd"] is None and claude["actual_cost_usd"] == 1.0
    assert claude["api_call_count"] == 2

    with pytest.raises(UnknownSessionError):  # the synchronous apply raises (S2)
        db.accounting.update_token_counts("missing", model="m", provider="p")


async def test_use_after_close_raises(tmp_path):
    db = await SessionDB.open(tmp_path / "state.db")
    await db.close()
    await db.close()  # idempotent
    with pytest.raises(StorageClosedError):
        await db.list_sessions()
    fut = db.enqueue_message("x", {"role": "user", "content": "late"})
    assert isinstance(fut.exception(), StorageClosedError)
