"""Focus and feedback (issue 17 item 7, Tab completion aside): the queue and the turn stay in
sight with the status panel hidden, a spinner while work runs, failed tools open, ctrl+c
stops, clears, and quits on a second press."""

from __future__ import annotations

from ui.tui_helpers import answer_approval, approval_dialog, reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.tool_block import ToolBlock

HELD = {"chunk_size": 6, "gate_after": 2}


async def test_queued_input_shows_in_the_status_line_with_the_panel_hidden(
    make_app, scripted_in_process
):
    server = scripted_in_process(
        {"replies": [reply("First answer.", gate="first", **HELD), reply("Second answer.")]}
    )
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        await type_keys(pilot, "f3")
        assert not app.status_panel.display and app.status_line.display
        await type_keys(pilot, *"first task", "enter")
        await wait_until(pilot, lambda: app.busy, what="the turn")
        await type_keys(pilot, *"second task", "enter")
        await wait_until(pilot, lambda: "queue 1" in app.status_line.text, what="the queue")
        assert app.composer.text == ""
        assert "(f5)" in app.status_line.text
        server.open_gate("first")
        await app.wait_for_turn()
        await pilot.pause()
        assert "queue" not in app.status_line.text and "idle" in app.status_line.text


async def test_a_spinner_runs_under_the_transcript_while_a_turn_runs(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("Streaming now.", gate="g", **HELD)]})
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        spinner = app.working_line
        assert not spinner.running and spinner.text == ""
        await app.submit("go")
        await wait_until(pilot, lambda: "writing" in spinner.text, what="the spinner")
        assert spinner.running and spinner.text[0] in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
        assert "esc stops" in spinner.text
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        assert not spinner.running and spinner.text == ""


async def test_enter_and_the_turn_s_end_leave_the_transcript_its_size(
    make_app, scripted_in_process
):
    """The working line's row is always there, blank while idle: a line that appeared at
    Enter shrank the transcript by a row, a layout and a repaint of the whole view of its own
    before the bubble's (Z2), and its going at the turn's end did it again."""
    server = scripted_in_process({"replies": [reply("Streaming now.", gate="g", **HELD)]})
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await pilot.pause()
        idle = app.transcript.size
        await type_keys(pilot, *"go", "enter")
        await wait_until(pilot, lambda: "writing" in app.working_line.text, what="the spinner")
        await pilot.pause()
        assert app.transcript.size == idle
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        assert app.working_line.text == "" and app.transcript.size == idle


async def test_a_failed_tool_block_is_open_with_its_error(make_app, scripted_in_process):
    call = {"id": "r1", "name": "read_file", "arguments": {"path": "no-such-file.txt"}}
    server = scripted_in_process(
        {"replies": [reply("Reading.", tool_calls=[call]), reply("It is missing.")]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await run_turn(pilot, "read it")
        block = app.transcript.query_one(ToolBlock)
        assert block.state == "error" and block.expanded and block.body.display
        assert "no-such-file.txt" in str(block.body.content)


async def test_ctrl_c_stops_a_running_turn(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [reply("KEPT and the rest never comes", gate="never", **HELD)]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await app.submit("talk")
        await wait_until(pilot, lambda: "writing" in app.working_line.text, what="streaming")
        await type_keys(pilot, "ctrl+c")
        await app.wait_for_turn()
        await pilot.pause()
        assert app.status_panel.status.state == "stopped"
        assert app.is_running, "a stop is not a quit"


async def test_ctrl_c_clears_the_composer_then_quits_on_a_second_press(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await type_keys(pilot, *"half a thought")
        await type_keys(pilot, "ctrl+c")
        assert app.composer.text == "" and app.is_running
        await type_keys(pilot, "up")
        assert app.composer.text == "half a thought", "cleared text is one Up away"
        await type_keys(pilot, "ctrl+c", "ctrl+c")
        assert app.is_running, "the first press on an empty composer only warns"
        await type_keys(pilot, "ctrl+c")
        await wait_until(pilot, lambda: app.return_code is not None, what="the app to quit")
        assert app.return_code == 0


async def test_ctrl_q_quits(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await type_keys(pilot, "ctrl+q")
        await wait_until(pilot, lambda: app.return_code is not None, what="the app to quit")
        assert app.return_code == 0


async def test_a_tool_block_says_awaiting_approval_while_the_dialog_waits(
    make_app, scripted_in_process
):
    call = {"id": "s1", "name": "run_shell", "arguments": {"command": "true"}}
    server = scripted_in_process(
        {"replies": [reply("Running.", tool_calls=[call]), reply("Done.")]}
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 36)) as pilot:
        await app.submit("run it")
        await approval_dialog(pilot)
        block = app.transcript.query_one(ToolBlock)
        assert "◌ awaiting approval" in block.header_content().plain
        assert "waiting for your answer" in app.working_line.text
        await answer_approval(pilot, "n")
        await app.wait_for_turn()
