"""Resume knows where a session lives (issue 17 item 6): the sessions panel names another
workspace's folder and lists this one's sessions first; resuming a session from another
folder asks whether its tools run there or here, and the answer is recorded."""

from __future__ import annotations

import sqlite3

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.screens.workspace import WorkspaceScreen
from hermes_tui.widgets.tool_block import ToolBlock

READ = {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}


def stored_workspace(app, session_id: str) -> str:
    conn = sqlite3.connect(app.config.db_path)
    try:
        return conn.execute("SELECT workspace FROM sessions WHERE id=?", (session_id,)).fetchone()[
            0
        ]
    finally:
        conn.close()


async def a_session_in(make_app, server, text: str) -> str:
    """Run one turn in the fixture's workspace; returns the session id."""
    app = make_app(server)
    async with app.run_test(size=(140, 40)) as pilot:
        await run_turn(pilot, text)
        return app.agent.session_id


def elsewhere(make_app, server, tmp_path):
    """An app started in another folder (with its own README)."""
    other = tmp_path / "other-project"
    other.mkdir(exist_ok=True)
    (other / "README.md").write_text("# the other project\n", encoding="utf-8")
    app = make_app(server)
    app.workspace = other.resolve()
    return app, other.resolve()


async def test_the_panel_names_another_workspace_and_lists_this_one_first(
    make_app, scripted_in_process, tmp_path
):
    server = scripted_in_process({"replies": [reply("One."), reply("Two.")]})
    first = await a_session_in(make_app, server, "from the sample project")
    app, _other = elsewhere(make_app, server, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await run_turn(pilot, "from the other project")
        panel = app.sessions_panel
        assert [s["id"] for s in panel.sessions][-1] == first, "this folder's sessions first"
        labels = [str(option.prompt) for option in panel.option_list.options]
        assert "in workspace" in labels[-1], labels
        assert "in " not in labels[0].split("\n")[1], labels


async def test_resuming_from_another_folder_can_switch_to_it(
    make_app, scripted_in_process, tmp_path
):
    server = scripted_in_process({"replies": [reply("One."), reply("Reading.", tool_calls=[READ]),
                                   reply("Done.")]})  # fmt: skip
    session_id = await a_session_in(make_app, server, "hello")
    app, other = elsewhere(make_app, server, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        await app.resume_session(session_id)
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceScreen), what="dialog")
        await type_keys(pilot, "s")
        await wait_until(pilot, lambda: not isinstance(app.screen, WorkspaceScreen), what="close")
        assert app.agent.workspace != other, "it went back to the session's folder"
        assert app.agent.workspace.name == "workspace"
        await run_turn(pilot, "read the readme")
        block = app.transcript.query(ToolBlock).last()
        assert "sample project" in block.output, block.output
        assert stored_workspace(app, session_id) == str(app.agent.workspace)


async def test_continuing_here_records_this_folder(make_app, scripted_in_process, tmp_path):
    server = scripted_in_process({"replies": [reply("One."), reply("Reading.", tool_calls=[READ]),
                                   reply("Done.")]})  # fmt: skip
    session_id = await a_session_in(make_app, server, "hello")
    app, other = elsewhere(make_app, server, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        await app.resume_session(session_id)
        await wait_until(pilot, lambda: isinstance(app.screen, WorkspaceScreen), what="dialog")
        await type_keys(pilot, "c")
        await wait_until(pilot, lambda: not isinstance(app.screen, WorkspaceScreen), what="close")
        assert app.agent.workspace == other
        await wait_until(
            pilot, lambda: stored_workspace(app, session_id) == str(other), what="recorded"
        )
        await run_turn(pilot, "read the readme")
        assert "the other project" in app.transcript.query(ToolBlock).last().output
        # Asked once: the session lives here now.
        await app.submit("/new")
        await app.resume_session(session_id)
        await pilot.pause()
        assert not isinstance(app.screen, WorkspaceScreen)


async def test_a_session_whose_folder_is_gone_continues_here_and_says_so(
    make_app, scripted_in_process, tmp_path, workspace
):
    server = scripted_in_process({"replies": [reply("One.")]})
    session_id = await a_session_in(make_app, server, "hello")
    app, other = elsewhere(make_app, server, tmp_path)
    conn = sqlite3.connect(app.config.db_path)
    conn.execute("UPDATE sessions SET workspace=? WHERE id=?", (str(tmp_path / "gone"), session_id))
    conn.commit()
    conn.close()
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        await app.resume_session(session_id)
        await pilot.pause()
        assert not isinstance(app.screen, WorkspaceScreen)
        assert app.agent.workspace == other
        assert stored_workspace(app, session_id) == str(other)


async def test_resume_alone_opens_the_sessions_list(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("One.")]})
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "hello")
        assert not app.sessions_panel.display  # folded away at 80 columns
        await app.submit("/resume")
        await pilot.pause()
        assert app.sessions_panel.display and app.sessions_panel.option_list.has_focus
