"""A checkpoint is linked to the user message that caused it even when the message's row
was still queued (a busy database) at the turn's first change (X2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.checkpoints.checkpointer import Checkpointer
from agent.checkpoints.shadow import git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


@dataclass
class Message:
    db_id: int | None = None


def test_a_message_written_after_the_first_change_is_still_linked(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    recorded: list[dict] = []
    updated: list[tuple[str, dict]] = []
    checkpointer = Checkpointer.for_workspace(
        ws,
        tmp_path / "home",
        lambda _text, _level: None,
        record=lambda _session, row: recorded.append(row),
        update=lambda _session, key, fields: updated.append((key, fields)),
    )
    try:
        message = Message()
        checkpointer.begin_turn("s1", message)
        checkpointer.before_change("write", "a.txt")
        [row] = recorded
        assert row["message_id"] is None  # its row was not written yet
        message.db_id = 41  # ... and now it is
        (ws / "a.txt").write_text("b\n")
        checkpointer.after_change("write", "a.txt")
        checkpointer.end_turn()
        checkpointer.idle()
        [(key, fields)] = updated
        assert key == row["key"] and fields["message_id"] == 41
    finally:
        checkpointer.close()


def test_a_message_known_at_once_is_not_linked_twice(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    recorded: list[dict] = []
    updated: list[dict] = []
    checkpointer = Checkpointer.for_workspace(
        ws,
        tmp_path / "home",
        lambda _text, _level: None,
        record=lambda _session, row: recorded.append(row),
        update=lambda _session, _key, fields: updated.append(fields),
    )
    try:
        checkpointer.begin_turn("s1", Message(db_id=3))
        checkpointer.before_change("shell")
        checkpointer.end_turn()
        checkpointer.idle()
        assert recorded[0]["message_id"] == 3 and "message_id" not in updated[0]
    finally:
        checkpointer.close()
