"""Durable sessions through whole turns: display rows (D1), ephemeral nudges (D2), exact
resume (D3), the typed recovery note (D4), the not-saved notice (S7), S5 and S6 at the agent."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest
from helpers import released_by_flush, unmarked
from waits import wait_until

from agent import events as ev
from agent.prompts import EMPTY_ANSWER_NUDGE
from agent.recovery import INTERRUPTED_TOOL_RESULT, RECOVERY_NOTE

WIRES = ["openai", "anthropic"]
DISPLAY_MARKERS = ("display_kind", "display_metadata", "model_switch", "note_kind", "◈")


def all_contents(harness) -> list[str]:
    conn = sqlite3.connect(harness.home / "state.db")
    try:
        return [r[0] for r in conn.execute("SELECT content FROM messages")]
    finally:
        conn.close()


@pytest.mark.parametrize("wire", WIRES)
def test_display_rows_are_stripped_from_payloads_and_resume_exactly(harness, wire):
    agent = harness.start(
        {"replies": [{"text": "first"}, {"text": "second"}, {"text": "third"}]}, wire=wire
    )
    first = agent.run_turn("one")
    agent.set_model("scripted:other-model")
    assert agent.run_turn("two").status == "ok"
    sid = first.session_id
    rows = harness.rows(sid)
    switch = [r for r in rows if r["display_kind"] == "model_switch"]
    assert len(switch) == 1
    assert switch[0]["display_metadata"] == {
        "from": "scripted:test-model",
        "to": "scripted:other-model",
    }
    # S5 through the agent: the session row follows the switch, not the old queued delta.
    session = harness.loop.run(harness.db.get_session(sid))
    assert (session["model"], session["api_call_count"]) == ("other-model", 2)
    conn = sqlite3.connect(harness.home / "state.db")
    try:
        usage = conn.execute(
            "SELECT model FROM session_model_usage WHERE session_id = ?", (sid,)
        ).fetchall()
    finally:
        conn.close()
    assert sorted(model for (model,) in usage) == ["other-model", "test-model"]

    body = harness.server.requests[1].body
    sent = [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in body["messages"]
        if m["role"] != "system"
    ]
    assert sent == [("user", "one"), ("assistant", "first"), ("user", "two")]
    raw = json.dumps(body, ensure_ascii=False)
    assert not any(marker in raw for marker in DISPLAY_MARKERS), raw
    assert body["model"] == "other-model"

    # D3: a resumed agent holds exactly the stored rows (◈ row included) and sends the
    # same bytes the live agent sent, plus the new turn.
    other = harness.agent()
    other.resume(sid)
    assert [m.display_kind for m in other.messages] == [None, None, "model_switch", None, None]
    assert other.model_ref == "scripted:other-model"
    assert other.run_turn("three").status == "ok"
    before, after = harness.server.requests[1].body, harness.server.requests[2].body
    before, after = unmarked(before), unmarked(after)  # the cache marks move on ($1)
    assert after["messages"][: len(before["messages"])] == before["messages"]
    assert after.get("system") == before.get("system")
    raw = json.dumps(after, ensure_ascii=False)
    assert not any(marker in raw for marker in DISPLAY_MARKERS), raw
    assert harness.rows(sid)[2]["display_kind"] == "model_switch"  # kept through resume


@pytest.mark.parametrize("wire", WIRES)
def test_ephemeral_nudges_never_reach_the_database(harness, wire):
    agent = harness.start(
        {"replies": [{"text": ""}, {"text": "answer"}, {"text": ""}] * 2}, wire=wire
    )
    agent.run_turn("first")
    agent.run_turn("second")  # empty, nudged, empty again: the error exit
    assert EMPTY_ANSWER_NUDGE in json.dumps([r.body for r in harness.server.requests])
    assert all(EMPTY_ANSWER_NUDGE not in c for c in all_contents(harness))
    assert not any(m.ephemeral for m in agent.messages)


def _crashed_session(harness, *, with_results: bool) -> str:
    db = harness.db
    sid = harness.loop.run(
        db.create_session(model="test-model", provider="scripted", workspace="/w")
    )["id"]
    call = {"id": "c1", "name": "list_dir", "arguments": '{"path": "."}'}
    rows = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    if with_results:
        rows.append({"role": "tool", "content": "README.md", "tool_call_id": "c1"})
    for row in rows:
        harness.loop.run(db.add_message(sid, row))
    return sid


@pytest.mark.parametrize("wire", WIRES)
def test_recovery_note_is_typed_in_the_insert_that_persists_it(harness, wire):
    agent = harness.start({"replies": [{"text": "continuing", "gate": "g", "gate_after": 1}]})
    sid = _crashed_session(harness, with_results=True)
    agent.resume(sid)
    assert agent.interrupted

    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", agent.continue_interrupted()))
    worker.start()
    try:
        # The continuation's model call is in flight: if the process died now, the stored
        # note must already carry its type (D4).
        wait_until(lambda: harness.server.requests)
        conn = sqlite3.connect(harness.home / "state.db")
        try:
            note = conn.execute(
                "SELECT role, content, display_kind, display_metadata FROM messages"
                " WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                (sid,),
            ).fetchone()
        finally:
            conn.close()
        assert note == ("user", RECOVERY_NOTE, None, json.dumps({"note_kind": "recovery"}))
    finally:
        harness.server.open_gate("g")
        worker.join(30)
    assert box["r"].status == "ok"
    # Model-visible: the note reaches the provider as user text, without its type.
    raw = json.dumps(harness.server.requests[0].body, ensure_ascii=False)
    assert RECOVERY_NOTE[:40] in raw and "note_kind" not in raw
    assert not agent.interrupted


def test_unanswered_tool_calls_get_a_result_before_the_next_turn(harness):
    agent = harness.start({"replies": [{"text": "ok"}]})
    sid = _crashed_session(harness, with_results=False)
    agent.resume(sid)
    assert agent.interrupted
    assert agent.run_turn("go on").status == "ok"
    sent = harness.server.requests[0].body["messages"]
    assert sent[-2] == {"role": "tool", "tool_call_id": "c1", "content": INTERRUPTED_TOOL_RESULT}
    assert [r["role"] for r in harness.rows(sid)] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]


def test_user_is_told_once_that_the_session_is_not_being_saved(harness):
    agent = harness.start({"replies": [{"text": "a"}, {"text": "b"}, {"text": "c"}]})
    sid = agent.run_turn("one").session_id
    # The session vanishes under the agent (another process deleted it): writes now fail.
    conn = sqlite3.connect(harness.home / "state.db")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))
    conn.commit()
    conn.close()
    assert agent.run_turn("two").text == "b"  # the turn's text still arrives
    agent.run_turn("three")
    notices = [e for e in harness.events if isinstance(e, ev.SavingFailed) and not e.waiting]
    assert len(notices) == 1
    assert notices[0].message.startswith("This session is not being saved: ")
    assert "does not exist" in notices[0].message


TURN_EXITS = {
    "ok": [{"text": "done", "usage": {"input_tokens": 30, "output_tokens": 4}}],
    "error": [
        {
            "tool_calls": [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}],
            "usage": {"input_tokens": 30, "output_tokens": 4},
        },
        {"status": 401, "error_message": "key revoked"},
    ],
}


@pytest.mark.parametrize("outcome", sorted(TURN_EXITS))
def test_every_turn_exit_flushes_the_token_counts(harness, outcome):
    """S6: the turn end and an error exit flush: the counts are on disk when the turn returns."""
    agent = harness.start({"replies": TURN_EXITS[outcome]})
    with released_by_flush(harness.db):  # the token writer applies only when flushed
        result = agent.run_turn("go")
        assert result.status == outcome
        conn = sqlite3.connect(harness.home / "state.db")  # a reader that does not flush
        try:
            row = conn.execute(
                "SELECT input_tokens, output_tokens, api_call_count FROM sessions WHERE id = ?",
                (result.session_id,),
            ).fetchone()
        finally:
            conn.close()
    assert row == (30, 4, 1)
