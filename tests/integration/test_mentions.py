"""`@path` mentions through the agent over real HTTP and SQLite (SPEC P2, D1, D3)."""

from __future__ import annotations

from agent import events as ev
from agent.attachments import ATTACHMENTS_KEY, SHOWN_KEY


def test_the_row_keeps_what_the_model_read_and_what_the_user_typed(harness):
    (harness.workspace / "notes.txt").write_text("NOTE BODY\n")
    agent = harness.start({"replies": [{"text": "read it"}, {"text": "again"}]})
    assert agent.run_turn("summarise @notes.txt please").status == "ok"
    user = harness.bodies()[0]["messages"][-1]["content"]
    assert user.startswith("summarise @notes.txt please\n\n<attached_file")
    assert "NOTE BODY" in user
    [row] = [r for r in harness.rows(agent.session_id) if r["role"] == "user"]
    assert row["content"] == user
    meta = row["display_metadata"]
    assert meta[SHOWN_KEY] == "summarise @notes.txt please"
    assert [a["path"] for a in meta[ATTACHMENTS_KEY]] == ["notes.txt"]
    [attached] = [e for e in harness.events if isinstance(e, ev.InputAttached)]
    assert [a["path"] for a in attached.attachments] == ["notes.txt"]
    # The file changes later: the session replays what was attached then, the same bytes (D3).
    (harness.workspace / "notes.txt").write_text("CHANGED LATER\n")
    other = harness.agent()
    other.resume(agent.session_id)
    assert other.run_turn("and now?").status == "ok"
    replayed = harness.bodies()[-1]["messages"]
    assert any("NOTE BODY" in str(m["content"]) for m in replayed)
    assert not any("CHANGED LATER" in str(m["content"]) for m in replayed)


def test_a_plain_message_is_stored_as_typed(harness):
    agent = harness.start({"replies": [{"text": "ok"}]})
    assert agent.run_turn("mail me at a@b.com about @nothing").status == "ok"
    [row] = [r for r in harness.rows(agent.session_id) if r["role"] == "user"]
    assert row["content"] == "mail me at a@b.com about @nothing"
    assert row["display_metadata"] is None


def test_only_the_users_own_text_is_expanded_never_the_models_nor_a_steer(harness):
    (harness.workspace / "secret.txt").write_text("WORKSPACE SECRET\n")
    listing = {"id": "l1", "name": "list_dir", "arguments": {"path": "."}}
    agent = harness.start(
        {
            "replies": [
                {"text": "see @secret.txt", "tool_calls": [listing]},
                {"text": "and @README.md"},
            ]
        }
    )
    steered: list[bool] = []

    def steer_once() -> None:
        if not steered:
            steered.append(agent.steer("also @secret.txt"))

    agent.probes.before_model_call = steer_once
    assert agent.run_turn("hello").status == "ok"
    assert steered == [True]
    second = harness.bodies()[1]["messages"]
    assert second[-1] == {"role": "user", "content": "also @secret.txt"}
    sent = [m for body in harness.bodies() for m in body["messages"] if m["role"] != "system"]
    assert all("WORKSPACE SECRET" not in str(m["content"]) for m in sent)
    assert not [e for e in harness.events if isinstance(e, ev.InputAttached)]
