"""The sessions panel's search over the FTS5 index (S1): each matching session once, with
its best-ranked snippet (issue 29 item 3; the panel once listed a session per message)."""

from __future__ import annotations

from storage import search as search_module


async def test_each_session_is_listed_once_with_its_best_snippet(db):
    a = await db.create_session(model="m", provider="p", workspace="/w", title="alpha")
    b = await db.create_session(model="m", provider="p", workspace="/w", title="beta")
    filler = " ".join(f"word{n}" for n in range(60))
    await db.add_message(a["id"], {"role": "user", "content": f"a parser note {filler}"})
    await db.add_message(a["id"], {"role": "assistant", "content": "parser parser parser"})
    await db.add_message(b["id"], {"role": "user", "content": f"the parser again {filler}"})
    await db.add_message(a["id"], {"role": "user", "content": f"{filler} and a parser at last"})

    hits = await db.search_sessions("parser")

    assert [hit["title"] for hit in hits] == ["alpha", "beta"], "once each, newest match first"
    assert hits[0]["snippet"] == "[parser] [parser] [parser]", "the best-ranked message"
    assert "[parser]" in hits[1]["snippet"]
    assert len(await db.search("parser")) == 4, "the message search still lists every hit"


async def test_the_limit_counts_sessions_and_bad_syntax_finds_nothing(db):
    for n in range(5):
        session = await db.create_session(model="m", provider="p", workspace="/w", title=f"s{n}")
        for _ in range(3):
            await db.add_message(session["id"], {"role": "user", "content": "apple pie"})
    assert [hit["title"] for hit in await db.search_sessions("apple", limit=2)] == ["s4", "s3"]
    assert await db.search_sessions('" OR NEAR( ^') == []
    assert await db.search_sessions("   ") == []
    assert await db.search_sessions("zebra") == []


async def test_a_common_word_ranks_a_bounded_number_of_messages(db, monkeypatch):
    """The scan takes the newest matching messages only: an old session beyond it is not
    ranked (the cost of a common word stays bounded)."""
    old = await db.create_session(model="m", provider="p", workspace="/w", title="old")
    await db.add_message(old["id"], {"role": "user", "content": "common"})
    new = await db.create_session(model="m", provider="p", workspace="/w", title="new")
    for _ in range(3):
        await db.add_message(new["id"], {"role": "user", "content": "common"})
    monkeypatch.setattr(search_module, "SESSION_SCAN", 3)
    assert [hit["title"] for hit in await db.search_sessions("common")] == ["new"]


async def test_g1_a_subagents_child_session_is_found_by_neither_search(db):
    """G1: a child session (a subagent's conversation) surfaces in no search, neither the
    message search nor the sessions panel's, and its hits take no place under the limit."""
    parent = await db.create_session(model="m", provider="p", workspace="/w", title="parent")
    child = await db.create_session(
        model="m", provider="p", workspace="/w", title="child", parent_session_id=parent["id"]
    )
    await db.add_message(parent["id"], {"role": "user", "content": "find the tokenizer"})
    for _ in range(3):
        await db.add_message(child["id"], {"role": "tool", "content": "tokenizer.py line 1"})

    assert [hit["title"] for hit in await db.search_sessions("tokenizer")] == ["parent"]
    hits = await db.search("tokenizer", limit=1)
    assert [hit["session_id"] for hit in hits] == [parent["id"]], "the child took the one place"
    assert await db.search_sessions("tokenizer.py line") == []
