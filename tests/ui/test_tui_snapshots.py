"""Deterministic SVG snapshots of the screen (fixed size, clock, home, and scripted model)."""

from __future__ import annotations

from ui.tui_helpers import FIXED_NOW, FakeClock, approval_dialog, reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 36)


def test_empty_app_on_the_demo_model(snap_compare, make_app):
    app = make_app()

    async def ready(pilot):
        await app.ready()

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_finished_demo_turn(snap_compare, make_app):
    app = make_app()

    async def turn(pilot):
        await run_turn(pilot, "hello")

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)


def test_reasoning_live(snap_compare, make_app, scripted_in_process):
    thinking = "The user wants a haiku. I should count syllables: five, seven, five."
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "An old silent pond", reasoning=thinking, chunk_size=400, gate="g", gate_after=2
                )
            ]
        }
    )
    app = make_app(server)

    async def live(pilot):
        await app.submit("write a haiku")
        await wait_until(
            pilot,
            lambda: [b.text for b in app.transcript.query(ReasoningBlock)] == [thinking],
            what="live reasoning",
        )

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=live)
    finally:
        server.open_gate("g")


def test_reasoning_collapsed_after_the_answer(snap_compare, make_app, scripted_in_process):
    answer = "An old silent pond\nA frog jumps into the pond\nSplash! Silence again."
    server = scripted_in_process(
        {"replies": [reply(answer, reasoning="Five, seven, five syllables; classic imagery.")]}
    )
    app = make_app(server)

    async def turn(pilot):
        await run_turn(pilot, "write a haiku")

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)


def test_tool_block_running(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Running the tests.",
                    tool_calls=[
                        {"id": "t1", "name": "run_shell", "arguments": {"command": "sleep 30"}}
                    ],
                ),
                reply("done"),
            ]
        }
    )
    app = make_app(server, approval="yolo")

    async def running(pilot):
        await app.submit("run the tests")
        await wait_until(pilot, lambda: app.transcript.query(ToolBlock), what="tool block")

    assert snap_compare(app, terminal_size=SIZE, run_before=running)


def test_tool_blocks_ok_and_error_expanded(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Let me look.",
                    tool_calls=[
                        {"id": "a", "name": "list_dir", "arguments": {"path": "."}},
                        {"id": "b", "name": "read_file", "arguments": {"path": "missing.py"}},
                    ],
                ),
                reply("`missing.py` does not exist; the project has `app.py`."),
            ]
        }
    )
    app = make_app(server)

    async def turn(pilot):
        await run_turn(pilot, "show me missing.py")
        for block in app.transcript.query(ToolBlock):
            block.expanded = True
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)


def test_approval_modal_shows_the_diff(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "I'll fix the greeting.",
                    tool_calls=[
                        {
                            "id": "e1",
                            "name": "edit_file",
                            "arguments": {
                                "path": "app.py",
                                "old_string": "hello",
                                "new_string": "hello, world",
                            },
                        }
                    ],
                ),
                reply("Fixed."),
            ]
        }
    )
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock)

    async def modal(pilot):
        await app.submit("fix the greeting")
        await approval_dialog(pilot)
        clock.advance(1.0)
        await approval_dialog(pilot, armed=True)

    assert snap_compare(app, terminal_size=SIZE, run_before=modal)


def test_approval_modal_before_it_arms(snap_compare, make_app, scripted_in_process):
    """Keys typed as it opens are ignored and go to the composer; the buttons wait."""
    call = {"id": "w1", "name": "write_file", "arguments": {"path": "TODO", "content": "tests\n"}}
    server = scripted_in_process(
        {"replies": [reply("Noting it.", tool_calls=[call]), reply("Noted.")]}
    )
    app = make_app(server, approval="ask", approval_clock=FakeClock())

    async def modal(pilot):
        await app.submit("note the todo")
        await approval_dialog(pilot)
        await type_keys(pilot, *"also")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=modal)


def test_sessions_panel_with_several_sessions(snap_compare, make_app):
    app = make_app()
    seeds = [
        ("Fix the flaky login test", 40),
        ("Refactor the storage layer", 3 * 3600),
        ("Explain the build scripts", 2 * 86400),
        ("Add dark theme", 9 * 86400),
    ]

    async def seeded(pilot):
        await app.ready()
        for title, age in reversed(seeds):
            session = await app.db.create_session(
                model="gpt-4.1", provider="openai", workspace="/w", title=title
            )
            stamp = FIXED_NOW - age
            await app.db.update_session(
                session["id"], created_at=stamp, updated_at=stamp, last_activity_at=stamp
            )
            await app.db.add_message(session["id"], {"role": "user", "content": title})
            # A finished turn, so the resumed session is not offered as interrupted.
            await app.db.add_message(session["id"], {"role": "assistant", "content": "Done."})
        await app.refresh_sessions()
        await app.resume_session(app.sessions_panel.sessions[1]["id"])
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=seeded)


def test_error_block(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [{"status": 401, "error_message": "Incorrect API key provided: test."}]}
    )
    app = make_app(server)

    async def turn(pilot):
        await run_turn(pilot, "hello?")

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)


def test_layout_at_80x24(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Here is the plan:\n\n1. read `app.py`\n2. fix the bug\n\n"
                    "```python\nprint('hi')\n```",
                    reasoning="Short plan.",
                )
            ]
        }
    )
    app = make_app(server)

    async def turn(pilot):
        await run_turn(pilot, "make a plan")

    assert snap_compare(app, terminal_size=(80, 24), run_before=turn)


def test_help_screen(snap_compare, make_app):
    app = make_app()

    async def help_screen(pilot):
        await app.submit("/help")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")

    assert snap_compare(app, terminal_size=SIZE, run_before=help_screen)


def test_command_completion(snap_compare, make_app):
    app = make_app()

    async def typing(pilot):
        await app.ready()
        await type_keys(pilot, *"/s")

    assert snap_compare(app, terminal_size=SIZE, run_before=typing)


def test_sessions_panel_with_a_gguf_path_as_model(snap_compare, make_app):
    """A llama.cpp session is stored under its .gguf path: the row stays two lines."""
    app = make_app()

    async def seeded(pilot):
        await app.ready()
        models = ["/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf", "gpt-4.1"]
        for age, model in enumerate(models):
            session = await app.db.create_session(
                model=model,
                provider="llama",
                workspace=str(app.workspace),
                title=f"Work on {model[-9:]}",
            )
            stamp = FIXED_NOW - 300 * (age + 1)
            await app.db.update_session(
                session["id"], created_at=stamp, updated_at=stamp, last_activity_at=stamp
            )
        await app.refresh_sessions()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=seeded)
