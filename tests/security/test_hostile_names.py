"""Names from outside (files, sessions, servers, tools) show what they are: one row each, a
newline, tab, control or invisible character shown as a symbol, so no name can pose as
another or as two (SPEC H1). Pilot tests on real files with such names, real SQLite and
real git checkpoints; a table over every function that lists names.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from textual.widgets import Static
from ui.tui_helpers import answer_approval, approval_dialog, reply, run_turn
from waits import wait_until

from agent.checkpoints.shadow import git_available
from hermes_tui.commands.model_list import _one_line as model_list_line
from hermes_tui.commands.registry import SlashCommand
from hermes_tui.mcp_view import server_detail, server_row
from hermes_tui.safe_text import safe_name
from hermes_tui.screens.help import command_line
from hermes_tui.screens.rewind import RewindPoint
from hermes_tui.screens.workspace import WorkspaceScreen
from hermes_tui.widgets.completion import Choice, CompletionPopup
from hermes_tui.widgets.diff_view import ChangeReport, FileChange
from hermes_tui.widgets.markers import Marker, marker_text
from hermes_tui.widgets.messages import chip_label
from hermes_tui.widgets.queue_view import item_label
from hermes_tui.widgets.sessions_panel import folder_name, session_label, short_model
from hermes_tui.widgets.status_panel import StatusState, _instruction_lines, _model_line
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 36)
POSER = "a\nb.txt"
"""A file whose name, drawn raw, reads as two entries: `a` and `b.txt`."""
SHOWN = "a␊b.txt"
HOSTILE = "a\nb\t\x1b\u200b.c"
HOSTILE_SHOWN = "a␊b␉␛\\u200b.c"
"""Short enough for the narrowest list (the sessions panel's folder, 16 columns)."""


def test_safe_name_shows_newlines_tabs_controls_and_invisible_characters():
    """H1: a name is one row; each character that would not show as itself is a symbol."""
    assert safe_name(HOSTILE) == HOSTILE_SHOWN
    assert safe_name("a\nb\tc\x1bd\u200be.txt") == "a␊b␉c␛d\\u200be.txt"
    assert safe_name("src/app.py") == "src/app.py"
    assert safe_name("a  b\r") == "a  b␍"  # spaces stay as they are: `a  b` is not `a b`


def _server() -> SimpleNamespace:
    tool = SimpleNamespace(wire=f"mcp__{HOSTILE}", name=HOSTILE, read_only=False, description="")
    config = SimpleNamespace(
        origin="config",
        transport="stdio",
        describe=lambda: "cmd",
        variables=lambda: [HOSTILE],
        trusts=lambda _name: False,
    )
    return SimpleNamespace(
        name=HOSTILE,
        state="ready",
        transport="stdio",
        tools=[tool],
        schema_tokens=10,
        config=config,
        server_info="",
        error="",
        notes=[],
        prompts=[SimpleNamespace(name=HOSTILE, description="")],
    )


def _queued() -> SimpleNamespace:
    return SimpleNamespace(id=1, text=HOSTILE, origin="queued")


def _command() -> SlashCommand:
    return SlashCommand(HOSTILE, "", HOSTILE, lambda *_: None, origin=HOSTILE)


def _hints() -> str:
    popup = CompletionPopup()
    popup.show_hints([Choice(HOSTILE, HOSTILE)])
    return str(popup.content)


def _picker_row() -> str:
    popup = CompletionPopup()
    popup.show_picker("q", [Choice(HOSTILE)], 0)
    return str(popup.content).split("\n", 1)[1]


ROWS = {
    "Tab hints": _hints,
    "@ picker": _picker_row,
    "@ chip": lambda: chip_label({"path": HOSTILE, "kind": "file", "lines": 1})[0],
    "sessions panel title": lambda: session_label(
        {"title": HOSTILE, "model": "m"}, current=False, now=0.0
    ).plain.split("\n")[0],
    "sessions panel folder": lambda: folder_name(f"/w/{HOSTILE}"),
    "sessions panel model": lambda: short_model(HOSTILE, 40),
    "queue view": lambda: item_label(1, _queued()).plain,
    "/mcp server row": lambda: server_row(_server()),
    "/mcp tool and prompt rows": lambda: "\n".join(
        line for line in server_detail(_server()).split("\n") if "mcp__" in line or "/mcp:" in line
    ),
    "rewind picker files": lambda: RewindPoint(1, 1, "m", files=(HOSTILE,)).changed(),
    "/diff file list": lambda: FileChange(HOSTILE, "", 1, 0, expanded=False).header_content().plain,
    "status panel instructions": lambda: "\n".join(
        c.plain for c in _instruction_lines(StatusState(instructions=(HOSTILE,)))[1:]
    ),
    "status panel model": lambda: _model_line(HOSTILE),
    "instructions marker": lambda: (
        Marker("instructions", marker_text("instructions", {"joined": HOSTILE})).text
    ),
    "/help": lambda: command_line(_command(), 40).plain,
    "/model listing": lambda: model_list_line(HOSTILE),
    "tool block": lambda: ToolBlock("c1", HOSTILE, f"read_file {HOSTILE}").summary,
    "workspace question": lambda: WorkspaceScreen(HOSTILE, HOSTILE, HOSTILE).there,
}


@pytest.mark.parametrize("where", ROWS)
def test_every_list_shows_a_name_on_one_row_with_its_hidden_characters_shown(where):
    """H1: each list that shows outside names draws a hostile name as one visible row."""
    row = ROWS[where]()
    for line in row.split("\n"):
        assert "\t" not in line and "\x1b" not in line and "\u200b" not in line, (where, row)
    assert HOSTILE_SHOWN in row, (where, row)
    assert row.count("\n") == (1 if where == "/mcp tool and prompt rows" else 0), (where, row)


async def test_a_file_named_with_a_newline_is_one_entry_in_the_picker_and_is_not_inserted(
    make_app, workspace: Path
):
    """H1: `a\\nb.txt` is one row (`a␊b.txt`), never `a` and `b.txt`; picking it says why it
    cannot be attached instead of writing a mention that names another file."""
    (workspace / POSER).write_text("planted\n")
    (workspace / "b.txt").write_text("real\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        completion = app.completion
        await pilot.press("@", "b")
        await wait_until(
            pilot,
            lambda: {POSER, "b.txt"} <= set(completion.paths),
            what=lambda: f"both files in the picker (shows {completion.paths})",
        )
        await pilot.pause()
        popup = app.query_one(CompletionPopup)
        rows = str(popup.content).split("\n")
        assert len(rows) == 1 + len(completion.paths), rows  # a title, then one row a path
        assert any(row.endswith(SHOWN) for row in rows[1:]), rows
        assert sum(row.strip(" ▸") == "b.txt" for row in rows[1:]) == 1, rows
        # Picking it inserts nothing and says why, in the picker.
        while completion.paths[completion.highlight] != POSER:
            await pilot.press("down")
        await pilot.press("tab")
        await pilot.pause()
        assert app.composer.text == "@b"
        assert "a␊b.txt is not attached" in str(popup.content)
        await pilot.press("enter")  # Enter on it neither inserts nor sends
        await pilot.pause()
        assert app.composer.text == "@b" and not app.turns.busy
        # The real file is still picked as it is.
        while completion.paths[completion.highlight] != "b.txt":
            await pilot.press("down")
        await pilot.press("tab")
        await pilot.pause()
        assert app.composer.text == "@b.txt "


async def test_a_session_title_with_a_newline_shows_it_in_the_sessions_panel(make_app):
    """H1: a stored title `fix tests\\nrm -rf ~` is one row with `␊`, never `fix tests rm…`."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.db.create_session(
            model="m", provider="scripted", workspace=str(app.workspace), title="fix\nrm -rf ~"
        )
        await app.refresh_sessions()
        await pilot.pause()
        options = app.sessions_panel.option_list
        titles = [
            str(options.get_option_at_index(i).prompt).split("\n")[0]
            for i in range(options.option_count)
        ]
        assert any(title.strip() == "fix␊rm -rf ~" for title in titles), titles


@pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")
async def test_a_changed_file_named_with_a_newline_is_one_row_in_diff(
    make_app, scripted, workspace: Path
):
    """H1: /diff lists a file the model wrote as `a\\nb.txt` as `a␊b.txt`, one row."""
    write = {"id": "w1", "name": "write_file", "arguments": {"path": POSER, "content": "x\n"}}
    server = scripted({"replies": [reply("", tool_calls=[write]), reply("done")]})
    app = make_app(server, approval="yolo")
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "write it")
        assert (workspace / POSER).read_text() == "x\n"
        await app.submit("/diff")
        await pilot.pause()
        await app.changes.wait()
        await wait_until(pilot, lambda: app.transcript.query(ChangeReport), what="the report")
        [change] = app.transcript.query_one(ChangeReport).query(FileChange)
        header = change.header_content().plain
        assert SHOWN in header and "\n" not in header, header
        # The tool block's summary names the same file the same way.
        [block] = app.transcript.query(ToolBlock)
        assert block.summary == f"write_file {SHOWN}"


async def test_the_approval_dialog_names_a_path_with_a_newline_on_one_row(
    make_app, scripted, workspace: Path
):
    """H1, H2: asked to write `a\\nb.txt`, the dialog's summary reads `write_file a␊b.txt`,
    never `write_file a b.txt` or a second line `b.txt`."""
    write = {"id": "w1", "name": "write_file", "arguments": {"path": POSER, "content": "x\n"}}
    server = scripted({"replies": [reply("", tool_calls=[write]), reply("done")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=SIZE) as pilot:
        await app.submit("write it")
        dialog = await approval_dialog(pilot)
        summary = dialog.query_one("#approval-summary", Static).visual.plain
        assert summary == f"write_file create {SHOWN}", summary
        await answer_approval(pilot, "n")
        await app.wait_for_turn()
