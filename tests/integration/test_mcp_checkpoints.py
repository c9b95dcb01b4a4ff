"""An MCP tool's turn is checkpointed like a shell command's: right before the call, and
/undo puts back what the server wrote (X2, M1). A local MCP server runs as the user and can
write anything the agent's own tools can."""

from __future__ import annotations

import pytest
from mcp_harness import call
from mcp_servers import stdio_entry

from agent.checkpoints import session as changes
from agent.checkpoints.shadow import git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


def test_an_mcp_tool_that_writes_is_checkpointed_and_undone(mcp):
    ws = mcp.h.workspace
    target = ws / "notes.txt"
    target.write_text("mine\n")
    agent = mcp.start(
        {
            "replies": [
                call("mcp__w__write_note", {"path": str(target), "text": "the server's\n"}),
                {"text": "Wrote it."},
            ]
        },
        {"w": stdio_entry("writer")},
    )
    result = agent.run_turn("write the note through the server")
    assert result.status == "ok", result.error
    assert target.read_text() == "the server's\n"
    agent.checkpointer.idle()
    rows = mcp.h.loop.run(mcp.h.db.list_checkpoints(agent.session_id))
    [row] = rows
    assert row["shell"] and row["after_ref"]  # what changed is not told apart: like shell
    step = changes.undo_step(agent.checkpointer, rows)
    plan = step.plan
    outcome = changes.apply(
        agent.checkpointer,
        step.rewind,
        plan,
        overwrite=False,
        record=lambda r: mcp.h.db.enqueue_checkpoint(agent.session_id, r),
        mark_undone=lambda key: mcp.h.db.enqueue_checkpoint_update(
            agent.session_id, key, undone=True
        ),
    )
    assert outcome.restored == ["notes.txt"], outcome
    assert target.read_text() == "mine\n"
