"""A subagent's session is a child of its parent's (G1): linked, listed under it only,
never the one `--continue` picks, not counted as one of the sessions."""

from __future__ import annotations


async def test_g1_a_child_session_is_linked_and_left_out_of_lists_and_continue(db):
    """G1: a child made after its parent is still not the newest session, nor the one
    `--continue` resumes; `child_sessions` finds it, `get_session` opens it."""
    parent = await db.create_session(model="m", provider="p", workspace="/w", title="parent")
    child = await db.create_session(
        model="m", provider="p", workspace="/w", title="child", parent_session_id=parent["id"]
    )
    assert child["parent_session_id"] == parent["id"] and parent["parent_session_id"] is None
    assert [s["id"] for s in await db.list_sessions()] == [parent["id"]]
    assert (await db.latest_session_in("/w"))["id"] == parent["id"]
    assert await db.count_sessions() == 1
    assert [s["id"] for s in await db.child_sessions(parent["id"])] == [child["id"]]
    assert (await db.find_session(child["id"]))["title"] == "child"
