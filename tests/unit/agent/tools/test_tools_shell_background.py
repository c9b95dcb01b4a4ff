"""run_shell's `background: true`, shell_output and shell_stop in process (G2): the output
ring and its notes, the approval that says it keeps running, refusals in one sentence."""

from __future__ import annotations

import pytest

from agent.background import BackgroundTable, OutputRing
from agent.tools import ToolContext


@pytest.fixture
def table():
    """A table of this test's own; nothing it started outlives the test."""
    mine = BackgroundTable(grace=0.2)
    yield mine
    mine.stop_all(grace=0.2)


def test_g2_the_ring_keeps_the_newest_bytes_and_counts_the_rest():
    """G2: a process's output is kept to the ring's size; a read says what was dropped."""
    ring = OutputRing(cap=10)
    ring.feed(b"0123456789abcdef")
    assert ring.since(0) == (b"6789abcdef", 6, 16)
    assert ring.since(12) == (b"cdef", 0, 16)


def test_g2_a_flood_of_output_is_read_as_its_tail_with_notes(reg, ws, table):
    """G2: past the ring, the oldest output is dropped and said; past the model's cap, the
    read keeps the newest characters and says how many it left out."""
    table.buffer_bytes = 1000
    ctx = ToolContext(ws, approval_mode="yolo", background=table, output_cap=600)
    flood = "head -c 5000 /dev/zero | tr '\\0' a; echo END; exec sleep 60"
    result = reg.run("run_shell", {"command": flood, "background": True}, ctx)
    assert result.ok, result.output
    assert "[4004 bytes of output were dropped unread: only the newest 1000 bytes are kept]" in (
        result.output
    )
    assert "[... 700 earlier characters not shown ...]" in result.output
    assert result.output.endswith("a" * 296 + "END")
    again = reg.run("shell_output", {"id": "bg1"}, ctx)
    assert again.output.endswith("(no new output)")


def test_g2_the_approval_says_it_keeps_running(reg, ws, table):
    """G2: a background command is approved like any command, and the dialog says it
    keeps running after the call."""
    asked = []
    ctx = ToolContext(ws, approve=lambda request: asked.append(request) or False, background=table)
    result = reg.run("run_shell", {"command": "sleep 60", "background": True}, ctx)
    assert result.declined
    (request,) = asked
    assert request.summary == "run_shell (background) sleep 60"
    assert "runs in the background: keeps running after this call, until shell_stop" in (
        request.detail
    )
    assert "timeout:" not in request.detail
    assert table.processes() == []


def test_g2_a_full_table_refuses_before_asking(reg, ws, table):
    """G2: at the cap nothing is asked: the refusal is one sentence."""
    table.limit = 1
    asked = []
    ctx = ToolContext(ws, approve=lambda request: asked.append(request) or True, background=table)
    reg.run("run_shell", {"command": "echo up; exec sleep 60", "background": True}, ctx)
    assert len(asked) == 1
    result = reg.run("run_shell", {"command": "sleep 60", "background": True}, ctx)
    assert result.output == (
        "Refused: 1 background process already run (bg1), the most at once; stop one with "
        "shell_stop first."
    )
    assert len(asked) == 1


def test_g2_an_unknown_id_names_the_ones_there_are(reg, ws, table):
    ctx = ToolContext(ws, approval_mode="yolo", background=table)
    reg.run("run_shell", {"command": "echo hi; exec sleep 60", "background": True}, ctx)
    for tool in ("shell_output", "shell_stop"):
        result = reg.run(tool, {"id": "bg7"}, ctx)
        assert not result.ok
        assert result.output == "There is no background process 'bg7'; this session's are: bg1."


def test_g2_a_command_that_ends_at_once_says_it_is_not_in_the_background(reg, ws, table):
    ctx = ToolContext(ws, approval_mode="yolo", background=table)
    result = reg.run("run_shell", {"command": "echo done; exit 3", "background": True}, ctx)
    assert not result.ok
    assert result.output.startswith("[it ended within 1.5 s, so it is not running")
    assert "[bg1 exited with code 3]" in result.output
    assert reg.run("shell_stop", {"id": "bg1"}, ctx).output == (
        "bg1 (echo done; exit 3) is not running: it exited with code 3."
    )


def test_g2_without_a_table_background_is_refused(reg, ws):
    ctx = ToolContext(ws, approval_mode="yolo")
    result = reg.run("run_shell", {"command": "sleep 1", "background": True}, ctx)
    assert result.output == "Background processes are not available here."
