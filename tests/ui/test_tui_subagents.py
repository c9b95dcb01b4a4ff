"""The subagent's block in the TUI (G1): live activity while it works (the tool it runs, its
calls, its tokens), folded when done with its answer inside, its part of the totals in the
status panel; and a snapshot of the finished block."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.messages import NoticeLine
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 36)
CHILD = {"system_contains": "You were started by another agent"}
README_CALL = {"id": "c1", "name": "read_file", "arguments": {"path": "README.md"}}
TASK = {
    "id": "t1",
    "name": "task",
    "arguments": {"prompt": "Find the title.", "description": "find the title"},
}


def script(gate: str | None = None) -> dict:
    held = {"gate": gate} if gate else {}
    return {
        "replies": [
            reply(match={**CHILD, "last_role": "user"}, tool_calls=[README_CALL]),
            reply("The title is **sample**.", match={**CHILD, "last_role": "tool"}, **held),
            reply(tool_calls=[TASK]),
            reply("The README is titled sample."),
        ]
    }


def task_block(app) -> ToolBlock | None:
    return next((b for b in app.query(ToolBlock) if b.tool_name == "task"), None)


async def test_g1_the_block_shows_the_subagent_live_then_folds_with_its_answer(
    make_app, scripted_in_process, workspace
):
    """G1: while the subagent's last call is held its block names the tool it ran and
    counts calls and tokens; when done it is folded, ok, its answer inside; the panel
    shows the subagents' part of the tokens."""
    (workspace / "README.md").write_text("# sample\n")
    server = scripted_in_process(script(gate="answer"))
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("what is the title?")
        await wait_until(pilot, lambda: task_block(app) is not None, what="the task block")
        block = task_block(app)
        await wait_until(
            pilot,
            lambda: "1 call" in str(block.header_content()),
            what=lambda: f"live activity, header: {block.header_content()}",
        )
        assert "read_file README.md" in str(block.header_content())
        assert block.state == "running"
        server.open_gate("answer")
        await app.wait_for_turn(20)
        await wait_until(pilot, lambda: block.state == "ok", what="the block finished")
        header = str(block.header_content())
        assert "1 call" in header and "tokens" in header
        assert "read_file README.md" not in header  # the live tool is gone once it is done
        assert not block.expanded and "The title is **sample**." in block.output
        assert "subagents 2.6k" in app.status_panel.text


def test_g1_the_finished_subagent_block(snap_compare, make_app, scripted_in_process, workspace):
    """G1: the finished `task` block, folded, with its calls and tokens, and the panel's
    subagents line."""
    (workspace / "README.md").write_text("# sample\n")
    app = make_app(scripted_in_process(script()))

    async def finished(pilot):
        await app.ready()
        await run_turn(pilot, "what is the title?")
        await wait_until(pilot, lambda: "subagents" in app.status_panel.text, what="panel")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=finished)


async def test_g1_a_subagents_approval_goes_to_the_same_dialog_naming_it(
    make_app, scripted_in_process, workspace
):
    """G1: a writing subagent's call asks in the app's approval dialog, which names the
    subagent and its job; the yes lets the write happen."""
    from ui.tui_helpers import answer_approval, approval_dialog

    folder = workspace / ".hermes-tui" / "agents"
    folder.mkdir(parents=True)
    (folder / "writer.md").write_text("---\ntools: [write_file]\n---\nWrite what you are asked.\n")
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "hi\n"}}
    job = {"prompt": "Write out.txt.", "agent_type": "writer", "description": "write the note"}
    server = scripted_in_process(
        {
            "replies": [
                reply(match={**CHILD, "last_role": "user"}, tool_calls=[write]),
                reply("Wrote out.txt.", match={**CHILD, "last_role": "tool"}),
                reply(tool_calls=[{"id": "t1", "name": "task", "arguments": job}]),
                reply("Done."),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("write the note")
        dialog = await approval_dialog(pilot, armed=True)
        asker = str(dialog.query_one("#approval-subagent").content)
        assert asker == "Asked by the writer subagent (write the note)"
        await answer_approval(pilot, "y")
        await app.wait_for_turn(20)
        assert (workspace / "out.txt").read_text() == "hi\n"


async def test_g1_esc_while_a_subagent_runs_stops_it_with_its_parent(
    make_app, scripted_in_process, workspace
):
    """G1: Esc in the TUI while the subagent's model call is held at the server's gate stops
    both: the subagent's call is cancelled, its block ends with the stop, the turn ends
    stopped and the parent asks the model nothing more."""
    (workspace / "README.md").write_text("# sample\n")
    server = scripted_in_process(
        {
            "replies": [
                reply("never seen " * 20, match=CHILD, gate="held", gate_after=1),
                reply(tool_calls=[TASK]),
                reply("must not be asked"),
            ]
        }
    )
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("what is the title?")
        try:
            await wait_until(
                pilot,
                lambda: len(server.requests) == 2 and task_block(app) is not None,
                timeout=30,
                what=lambda: f"the subagent's held call; requests: {len(server.requests)}",
            )
            block = task_block(app)
            assert block.state == "running"
            await type_keys(pilot, "escape")
            await app.wait_for_turn(20)
            await wait_until(pilot, lambda: block.state == "error", what="the task block stopped")
            assert "stopped" in block.output
            assert len(server.requests) == 2, "the parent asked the model again after the stop"
            notices = [n.text for n in app.transcript.query(NoticeLine)]
            assert "■ stopped" in notices
        finally:
            server.open_gate("held")  # a subagent the stop missed ends, and so does the test
