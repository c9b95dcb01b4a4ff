"""/undo, /rewind (and Esc Esc), /diff, /fork and /export in the real app (X1, X2)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from agent.checkpoints.shadow import git_available
from hermes_tui.screens.rewind import ConflictScreen, RewindScreen
from hermes_tui.widgets.diff_view import ChangeReport, FileChange
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import UserMessage

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


def write(path: str, content: str, call_id: str, text: str = "") -> dict:
    arguments = {"path": path, "content": content}
    return reply(text, tool_calls=[{"id": call_id, "name": "write_file", "arguments": arguments}])


def two_turns() -> dict:
    return {
        "replies": [
            write("one.txt", "1\n", "w1"),
            reply("first done"),
            write("app.py", "print('two')\n", "w2"),
            reply("second done"),
        ]
    }


async def command(pilot, app, text: str, until: Callable[[], object] | None = None) -> None:
    """Run a slash command and wait for its worker, then for `until` when it is given.

    Files, notices and the /diff report are done when the worker is; a ◈ marker is not: the
    agent's display row reaches the transcript through the event bridge, a frame (a timer)
    and a message later, which on a loaded machine is more than one pause. So a caller that
    reads the marker passes `until` (e.g. `one_more_marker(app)`) for it.
    """
    await app.submit(text)
    await pilot.pause()
    await app.changes.wait()
    if until is None:
        await pilot.pause()
    else:
        await wait_until(pilot, until, what=f"the marker of {text}")


def markers(app) -> list[str]:
    return [m.text for m in app.transcript.query(Marker)]


def one_more_marker(app) -> Callable[[], bool]:
    """True once the transcript has one more ◈ marker than it has now (call it before the
    command: the marker comes after the command's worker is done)."""
    before = len(markers(app))
    return lambda: len(markers(app)) > before


def last_marker_starts(app, start: str) -> Callable[[], bool]:
    """True once the newest ◈ marker starts with `start` (for a command that rebuilds the
    transcript, where counting markers says nothing)."""
    return lambda: markers(app)[-1:] != [] and markers(app)[-1].startswith(start)


async def test_undo_reverts_the_last_turn_and_leaves_a_marker(
    make_app, scripted_in_process, workspace
):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await command(pilot, app, "/undo", until=one_more_marker(app))
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert (workspace / "one.txt").exists()
        assert markers(app)[-1] == "◈ undid the turn “second”: 1 file restored (app.py)"
        await command(pilot, app, "/undo", until=one_more_marker(app))
        assert not (workspace / "one.txt").exists()
        await command(pilot, app, "/undo")
        assert "Nothing left to undo" in app.transcript.children[-1].render().plain


def notice_text(app) -> str:
    return app.transcript.children[-1].render().plain


async def test_undo_steps_back_over_a_read_only_turn_and_redo_steps_forward(
    make_app, scripted_in_process, workspace
):
    """X2 (issue 29): each /undo takes back one turn that changed files, however many
    read-only turns came after it, and says what it restored; /redo steps forward again;
    at either end it says there is nothing left and points to /rewind."""
    script = two_turns()
    ls = {"id": "s1", "name": "run_shell", "arguments": {"command": "ls"}}
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "app.py"}}
    script["replies"] += [
        reply("", tool_calls=[ls]),
        reply("listed"),
        reply("", tool_calls=[read]),
        reply("read"),
    ]
    app = make_app(scripted_in_process(script), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        for text in ("first", "second", "list the files", "read app.py"):
            await run_turn(pilot, text)
        await command(pilot, app, "/undo", until=one_more_marker(app))
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert markers(app)[-1] == "◈ undid the turn “second”: 1 file restored (app.py)"
        await command(pilot, app, "/undo", until=one_more_marker(app))
        assert not (workspace / "one.txt").exists()
        assert markers(app)[-1] == "◈ undid the turn “first”: 1 file restored (one.txt)"
        await command(pilot, app, "/undo")
        assert notice_text(app).startswith("Nothing left to undo")
        assert "/rewind goes back to any message" in notice_text(app)
        # Nothing-left notices are shown by the command's worker: no marker to wait for.
        await command(pilot, app, "/redo", until=one_more_marker(app))
        assert (workspace / "one.txt").read_text() == "1\n"
        assert markers(app)[-1] == "◈ redid the turn “first”: 1 file restored (one.txt)"
        await command(pilot, app, "/redo", until=one_more_marker(app))
        assert (workspace / "app.py").read_text() == "print('two')\n"
        assert markers(app)[-1] == "◈ redid the turn “second”: 1 file restored (app.py)"
        await command(pilot, app, "/redo")
        assert notice_text(app).startswith("Nothing to redo")
        await command(pilot, app, "/undo")  # the redone turn is undone again
        assert (workspace / "app.py").read_text() == "print('hello')\n"


async def test_redo_is_gone_once_a_turn_changes_files_and_keeps_outside_edits(
    make_app, scripted_in_process, workspace
):
    """X2 (issue 29): after /undo, the user's own edit is a conflict /redo asks about (kept
    unless confirmed); a new turn that changes files drops what /redo could bring back."""
    script = two_turns()
    script["replies"] += [write("three.txt", "3\n", "w3"), reply("third done")]
    app = make_app(scripted_in_process(script), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await command(pilot, app, "/undo", until=one_more_marker(app))
        await command(pilot, app, "/undo", until=one_more_marker(app))
        (workspace / "one.txt").write_text("mine\n")
        marked = one_more_marker(app)
        await app.submit("/redo")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictScreen), what="conflicts")
        assert app.screen.paths == ["one.txt"]
        await type_keys(pilot, "enter")
        await app.changes.wait()
        await wait_until(pilot, marked, what="the redo's marker")
        assert (workspace / "one.txt").read_text() == "mine\n"
        assert "kept as changed outside (one.txt)" in markers(app)[-1]
        await run_turn(pilot, "third")
        await command(pilot, app, "/redo")
        assert notice_text(app).startswith("Nothing to redo: files were changed by a turn")
        assert (workspace / "app.py").read_text() == "print('hello')\n"


async def test_undo_keeps_an_outside_edit_unless_confirmed(
    make_app, scripted_in_process, workspace
):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await app.changes.wait()
        await pilot.pause()
        (workspace / "app.py").write_text("print('mine')\n")
        await app.submit("/undo")
        await wait_until(pilot, lambda: isinstance(app.screen, ConflictScreen), what="conflicts")
        assert app.screen.paths == ["app.py"]
        await type_keys(pilot, "enter")
        await app.changes.wait()
        await wait_until(
            pilot,
            lambda: "kept as changed outside" in "".join(markers(app)[-1:]),
            what="the undo's marker",
        )
        assert (workspace / "app.py").read_text() == "print('mine')\n"
        assert "kept as changed outside (app.py)" in markers(app)[-1]


async def test_rewind_both_restores_code_and_conversation(make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        session_id = app.agent.session_id
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        picker = app.screen
        assert [p.text for p in picker.points] == ["second", "first"]
        assert picker.points[0].files == ("app.py",)
        await type_keys(pilot, "enter")  # "second", the newest
        await type_keys(pilot, "enter")  # restore code and conversation
        await app.changes.wait()
        await wait_until(pilot, lambda: app.composer.text, what="the rewound message back")
        # The composer is filled before the marker is sent: wait for the marker too.
        await wait_until(pilot, last_marker_starts(app, "◈ rewound"), what="the rewind's marker")
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert (workspace / "one.txt").exists()
        assert app.agent.session_id == session_id
        assert [m.text for m in app.transcript.query(UserMessage)] == ["first"]
        assert app.composer.text == "second"
        assert markers(app)[-1].startswith("◈ rewound to before “second”")
        # The later messages are kept as a branch of the session.
        sessions = await app.db.list_sessions()
        branch = next(s for s in sessions if s["parent_id"] == session_id)
        assert branch["branch_kind"] == "rewind"
        rows = await app.db.load_messages(branch["id"])
        assert [r["content"] for r in rows if r["role"] == "user"] == ["first", "second"]
        # The model will not see the rewound turn.
        assert [m.content for m in app.agent.messages if m.role == "user"] == ["first"]


async def test_rewind_conversation_only_keeps_the_code(make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        await type_keys(pilot, "down", "enter")  # "first"
        await type_keys(pilot, "down", "enter")  # conversation only
        await app.changes.wait()
        await wait_until(pilot, lambda: app.composer.text, what="the rewound message back")
        assert (workspace / "app.py").read_text() == "print('two')\n"
        assert not app.transcript.query(UserMessage)
        assert app.composer.text == "first"


async def test_a_rewind_of_the_conversation_drops_what_redo_could_bring_back(
    make_app, scripted_in_process, workspace
):
    """X2 (issue 29): a /rewind is a change of its own: the /undo before it is not redone."""
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await command(pilot, app, "/undo", until=one_more_marker(app))
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        await type_keys(pilot, "enter")  # "second"
        await type_keys(pilot, "down", "enter")  # conversation only
        await app.changes.wait()
        # The rewind's marker first, or it lands after /redo's notice, which is read below.
        await wait_until(pilot, last_marker_starts(app, "◈ rewound"), what="the rewind's marker")
        await command(pilot, app, "/redo")
        assert notice_text(app).startswith("Nothing to redo")
        assert (workspace / "app.py").read_text() == "print('hello')\n"


async def test_rewind_code_only_keeps_the_conversation(make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        await type_keys(pilot, "down", "enter")  # "first"
        await type_keys(pilot, "down", "down", "enter")  # code only
        await app.changes.wait()
        await wait_until(
            pilot, lambda: not isinstance(app.screen, RewindScreen), what="the picker closed"
        )
        assert not (workspace / "one.txt").exists()
        assert (workspace / "app.py").read_text() == "print('hello')\n"
        assert [m.text for m in app.transcript.query(UserMessage)] == ["first", "second"]


async def test_escape_twice_on_an_empty_composer_opens_the_picker(
    make_app, scripted_in_process, workspace
):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await type_keys(pilot, "escape")
        await pilot.pause()
        assert not isinstance(app.screen, RewindScreen)
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, RewindScreen), what="closed")
        # With text in the composer, Esc Esc does not open it.
        app.composer.text = "draft"
        await type_keys(pilot, "escape", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, RewindScreen)


async def test_escape_that_stops_a_turn_does_not_open_the_picker(
    make_app, scripted_in_process, workspace
):
    server = scripted_in_process(
        {"replies": [reply("slow " * 50, chunk_size=4, gate="g", gate_after=1)]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("talk")
        await wait_until(pilot, lambda: app.busy, what="the turn")
        await type_keys(pilot, "escape")
        server.open_gate("g")
        await app.wait_for_turn()
        await type_keys(pilot, "escape")
        await pilot.pause()
        assert not isinstance(app.screen, RewindScreen)


async def test_diff_shows_every_file_the_session_changed(make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await run_turn(pilot, "second")
        await command(pilot, app, "/diff")
        report = app.transcript.query_one(ChangeReport)
        files = {f.path: (f.added, f.removed) for f in report.query(FileChange)}
        assert files == {"app.py": (1, 1), "one.txt": (1, 0)}


async def test_fork_starts_a_new_session_with_the_history(make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(two_turns()), approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        parent = app.agent.session_id
        # A fork keeps the history's markers and adds its own: one more than before.
        await command(pilot, app, "/fork", until=one_more_marker(app))
        assert app.agent.session_id != parent
        fork = await app.db.get_session(app.agent.session_id)
        assert (fork["parent_id"], fork["branch_kind"]) == (parent, "fork")
        assert fork["title"] == "first"
        label = app.sessions_panel._label(fork).plain
        assert label.startswith("● ↳ first") and "fork of first" in label
        assert [m.text for m in app.transcript.query(UserMessage)] == ["first"]
        assert markers(app)[-1] == "◈ forked from “first”"
        await run_turn(pilot, "second")
        parent_rows = await app.db.load_messages(parent)
        assert [r["content"] for r in parent_rows if r["role"] == "user"] == ["first"]


async def test_export_writes_markdown_and_json_without_reasoning(
    make_app, scripted_in_process, workspace, hermes_home
):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Writing.",
                    reasoning="private chain of thought",
                    tool_calls=[
                        {"id": "w1", "name": "write_file",
                         "arguments": {"path": "n.txt", "content": "hi\n"}}
                    ],
                ),
                reply("Done.", reasoning="more private thought"),
            ]
        }
    )  # fmt: skip
    app = make_app(server, approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "write n")
        await app.submit("/export")
        await pilot.pause()
        # Without a path: under the app's home, the path said; nothing new in the repository.
        exported = hermes_home / "exports" / f"hermes-session-{app.agent.session_id}.md"
        said = app.transcript.children[-1].render().plain
        assert said.startswith("Exported ") and said.endswith(f"{exported.name}.")
        assert "~/hermes-home/exports/" in said
        assert not list(workspace.glob("hermes-session-*"))
        assert (hermes_home / "exports").stat().st_mode & 0o077 == 0
        md = exported.read_text()
        assert "## You\n\nwrite n" in md and "**Tool** `write_file n.txt`" in md
        assert "```diff\n--- a/n.txt" in md and "+hi" in md
        assert "private" not in md
        await app.submit("/export json out/x.json")
        await wait_until(
            pilot,
            lambda: "does not exist" in app.transcript.children[-1].render().plain,
            what="the export's refusal",
        )
        await app.submit("/export json t.json")
        await pilot.pause()
        data = json.loads((workspace / "t.json").read_text())
        assert [m["role"] for m in data["messages"]][:2] == ["user", "assistant"]
        assert "private" not in json.dumps(data)
        assert Path(workspace / "t.json").stat().st_mode & 0o077 == 0
