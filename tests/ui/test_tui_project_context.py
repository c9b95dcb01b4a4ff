"""The project's own context in the TUI: instruction files, /context, /init, chips on
resume, custom command files (SPEC P1-P3, D1, D3)."""

from __future__ import annotations

from ui.tui_helpers import answer_approval, reply, run_turn
from waits import wait_until

from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import NoticeLine, UserMessage

SIZE = (120, 36)


def notices(app) -> list[str]:
    return [n.text for n in app.transcript.query(NoticeLine)]


async def test_the_status_panel_lists_the_files_and_context_costs_each_part(
    make_app, scripted_in_process, workspace
):
    (workspace / "AGENTS.md").write_text("Run `make test` first.\n" * 20)
    server = scripted_in_process({"replies": [reply("ok")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: "instructions ◈ AGENTS.md" in app.status_panel.text)
        await run_turn(pilot, "hello")
        await app.run_command("/context")
        await pilot.pause()
        view = notices(app)[-1]
        lines = view.splitlines()
        assert lines[0].startswith("The next request, in estimated tokens (window")
        parts = [line.split()[0] for line in lines[1:] if not line.startswith("    ")]
        assert parts == ["system", "instructions", "tools", "history", "total"]
        assert "    AGENTS.md  " in view and "1 file(s)" in view and "2 messages" in view


async def test_context_without_files_points_at_init(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.run_command("/context")
        await pilot.pause()
        assert notices(app)[-1].endswith("/init asks the agent to write an AGENTS.md.")


async def test_init_writes_agents_md_through_the_approval_and_the_next_turn_reads_it(
    make_app, scripted_in_process, workspace
):
    write = {
        "id": "w1",
        "name": "write_file",
        "arguments": {"path": "AGENTS.md", "content": "# Agents\n\nTest with `pytest -q`.\n"},
    }
    server = scripted_in_process(
        {"replies": [reply("Writing it.", tool_calls=[write]), reply("Done."), reply("ok")]}
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("/init")
        await answer_approval(pilot, "y")
        await app.wait_for_turn()
        await pilot.pause()
        assert (workspace / "AGENTS.md").read_text().startswith("# Agents")
        [message] = app.transcript.query(UserMessage)
        assert message.text == "/init"
        asked = server.requests[0].body["messages"][-1]["content"]
        assert asked.startswith("Write an AGENTS.md file at the root of this workspace")
        await run_turn(pilot, "what next?")
        assert "Test with `pytest -q`." in server.requests[-1].body["messages"][0]["content"]
        markers = [m.text for m in app.transcript.query(Marker)]
        assert "◈ instructions re-read: AGENTS.md (new)" in markers


async def test_init_builds_on_claude_md_which_stays_in_effect_beside_agents_md(
    make_app, scripted_in_process, workspace
):
    """P1 (issue 29): /init with only CLAUDE.md asks the agent to build on it and says so;
    afterwards both files are in effect, listed, and only AGENTS.md is named as new."""
    (workspace / "CLAUDE.md").write_text("Always run `make lint`.\n")
    write = {
        "id": "w1",
        "name": "write_file",
        "arguments": {"path": "AGENTS.md", "content": "# Agents\n\nLint with `make lint`.\n"},
    }
    server = scripted_in_process(
        {"replies": [reply("Writing.", tool_calls=[write]), reply("Kept: make lint."), reply("ok")]}
    )
    app = make_app(server, approval="yolo")
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: "◈ CLAUDE.md" in app.status_panel.text)
        await app.submit("/init")
        await app.wait_for_turn()
        await pilot.pause()
        told = [n for n in notices(app) if n.startswith("/init builds on")]
        assert told == [
            "/init builds on CLAUDE.md: the agent is asked to keep what is right in it "
            "and to say what it kept; it stays in effect."
        ]
        asked = server.requests[0].body["messages"][-1]["content"]
        assert "already in effect here, and their text is in your instructions: CLAUDE.md." in (
            asked
        )
        assert "saying what you kept" in asked
        await run_turn(pilot, "what next?")
        system = server.requests[-1].body["messages"][0]["content"]
        assert "Always run `make lint`." in system and "Lint with `make lint`." in system
        markers = [m.text for m in app.transcript.query(Marker)]
        assert markers == ["◈ instructions re-read: AGENTS.md (new)"]
        await wait_until(pilot, lambda: "◈ AGENTS.md" in app.status_panel.text)
        assert "◈ CLAUDE.md" in app.status_panel.text


async def test_a_subdirectory_file_joins_as_a_row_and_chips_come_back_on_resume(
    make_app, scripted_in_process, workspace
):
    (workspace / "src" / "AGENTS.md").write_text("SRC RULES\n")
    (workspace / "src" / "a.py").write_text("a = 1\n")
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "src/a.py"}}
    server = scripted_in_process(
        {"replies": [reply("Reading.", tool_calls=[read]), reply("It sets a."), reply("again")]}
    )
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "what does @src/a.py and @README.md do?")
        joined = "◈ instructions joined: src/AGENTS.md (for work under src/)"
        assert [m.text for m in app.transcript.query(Marker)] == [joined]
        [live] = app.transcript.query(UserMessage)
        assert [a["path"] for a in live.attachments] == ["src/a.py", "README.md"]
        session_id = app.agent.session_id
        await app.run_command("/new")
        await pilot.pause()
        await app.resume_session(session_id)
        await pilot.pause()
        [stored] = app.transcript.query(UserMessage)
        assert stored.text == live.text == "what does @src/a.py and @README.md do?"
        assert stored.attachments == live.attachments
        assert [m.text for m in app.transcript.query(Marker)] == [joined]
        await run_turn(pilot, "and again")
        assert "SRC RULES" in server.requests[-1].body["messages"][0]["content"]


async def test_command_files_a_broken_one_named_and_a_shadowing_one_qualified(
    make_app, workspace, hermes_home
):
    project = workspace / ".hermes-tui" / "commands"
    project.mkdir(parents=True)
    (project / "help.md").write_text("---\ndescription: The project's help\n---\nExplain it.\n")
    (project / "broken.md").write_text("---\ndescription: [unclosed\n---\nbody\n")
    user = hermes_home / "commands"
    user.mkdir()
    (user / "standup.md").write_text("Summarise yesterday's commits.\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: any("broken.md" in n for n in notices(app)))
        [skipped] = [n for n in notices(app) if "broken.md" in n]
        assert skipped.startswith("Skipped the project command file ")
        assert "its front matter is not valid YAML" in skipped
        names = [entry.name for entry in app.command_table.entries()]
        assert "project:help" in names and "standup" in names and "broken" not in names
        await app.run_command("/help")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = str(app.screen.query_one("#help-commands").render())
        assert "/project:help" in shown and "The project's help" in shown
        assert "(project)" in shown and "(user)" in shown


async def test_a_custom_command_sent_during_a_turn_waits_in_the_queue(
    make_app, scripted_in_process, workspace
):
    commands = workspace / ".hermes-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("Review $ARGUMENTS for bugs.\n")
    server = scripted_in_process(
        {"replies": [reply("first", gate="g", gate_after=1), reply("second")]}
    )
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("start")
        await wait_until(pilot, lambda: app.busy)
        await app.submit("/review app.py")
        [item] = app.input_queue.items
        assert (item.text, item.origin) == ("/review app.py", "command")
        server.open_gate("g")
        await wait_until(pilot, lambda: len(server.requests) == 2 and not app.busy, timeout=20)
        await pilot.pause()
        assert server.requests[-1].body["messages"][-1]["content"] == "Review app.py for bugs."
        texts = [m.text for m in app.transcript.query(UserMessage)]
        assert texts == ["start", "/review app.py"]


async def test_a_mention_of_a_missing_file_says_at_send_time_that_nothing_was_attached(
    make_app, scripted_in_process
):
    """P2 (issue 29 item 10): `@nosuchfile.py` shows a ✗ chip with the sent message."""
    from hermes_tui.widgets.messages import chip_label

    server = scripted_in_process({"replies": [reply("I see no file.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "explain @nosuchfile.py please")
        [sent] = app.transcript.query(UserMessage)
        labels = [chip_label(a)[0] for a in sent.attachments]
        assert labels == ["✗ nosuchfile.py · no such file in the workspace: nothing attached"]
