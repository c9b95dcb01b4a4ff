"""Every file change shows as a diff in the transcript, in every approval mode and after
resume; providers only ever see the tool's output (X1, D1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui.tui_helpers import answer_approval, reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.diff_view import DiffView
from hermes_tui.widgets.tool_block import ToolBlock


def edit(path: str, old: str, new: str, call_id: str = "e1") -> dict:
    """A scripted reply that edits one file."""
    arguments = {"path": path, "old_string": old, "new_string": new}
    return reply(tool_calls=[{"id": call_id, "name": "edit_file", "arguments": arguments}])


def diff_blocks(app) -> list[ToolBlock]:
    return [block for block in app.transcript.query(ToolBlock) if block.change is not None]


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "yolo"])
async def test_an_edit_shows_its_diff_in_every_mode(
    make_app, scripted_in_process, workspace: Path, mode
):
    server = scripted_in_process({"replies": [edit("app.py", "hello", "goodbye"), reply("Done.")]})
    app = make_app(server, approval=mode)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("say goodbye")
        if mode == "ask":
            await answer_approval(pilot, "y")
        await app.wait_for_turn()
        await pilot.pause()
        assert (workspace / "app.py").read_text() == "print('goodbye')\n"
        [block] = diff_blocks(app)
        path, text, added, removed = block.change
        assert (path, added, removed) == ("app.py", 1, 1)
        assert "-print('hello')" in text and "+print('goodbye')" in text
        assert block.expanded and block.diff_view.display
        assert "+1 −1" in block.header_content().plain
        # The model read the tool's sentence, never the diff.
        tool = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
        assert tool[0]["content"] == "Edited app.py: replaced 1 occurrence."


async def test_a_resumed_session_shows_the_stored_diff(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    tool_calls=[
                        {
                            "id": "w1",
                            "name": "write_file",
                            "arguments": {"path": "new.txt", "content": "one\ntwo\n"},
                        }
                    ]
                ),
                reply("Written."),
            ]
        }
    )
    app = make_app(server, approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "write it")
        session_id = app.agent.session_id
        await app.submit("/new")
        await pilot.pause()
        await app.run_command(f"/resume {session_id}")
        await wait_until(pilot, lambda: len(diff_blocks(app)) == 1, what="the resumed diff")
        [block] = diff_blocks(app)
        assert block.change[2:] == (2, 0)
        assert "+one" in block.change[1]
        rows = await app.db.load_messages(session_id)
        [tool] = [row for row in rows if row["role"] == "tool"]
        assert tool["content"] == "Created new.txt (8 bytes written)."
        assert tool["display_metadata"]["diff"]["added"] == 2


async def test_the_diff_folds_to_its_counts(make_app, scripted_in_process, workspace: Path):
    server = scripted_in_process({"replies": [edit("app.py", "hello", "hi"), reply("Done.")]})
    app = make_app(server, approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "shorter")
        [block] = diff_blocks(app)
        block.focus()
        await type_keys(pilot, "enter")
        assert not block.expanded and not block.diff_view.display
        assert block.header_content().plain.startswith("▸ edit_file")


async def test_a_wide_transcript_shows_the_diff_side_by_side(
    make_app, scripted_in_process, workspace
):
    server = scripted_in_process({"replies": [edit("app.py", "hello", "hi"), reply("Done.")]})
    app = make_app(server, approval="yolo")
    # Side panels take 70 columns there (the sessions panel at its widest, 44): the
    # transcript is 160 wide at 230.
    async with app.run_test(size=(230, 40)) as pilot:
        await run_turn(pilot, "shorter")
        view = app.transcript.query_one(DiffView)
        assert app.transcript.outer_size.width == 160
        assert view.side_by_side
        assert "│" in view.render().plain
        await pilot.resize_terminal(229, 40)
        await pilot.pause()
        assert app.transcript.outer_size.width == 159
        assert not view.side_by_side
        assert "│" not in view.render().plain


def test_a_diff_guesses_its_language_once_and_colours_every_line_as_it(monkeypatch):
    # A guess per line ran Pygments' guessers once a line (every lexer's analyse_text when
    # the file name did not decide), and could colour one file's lines as other languages.
    import textual.highlight

    guesses: list[str | None] = []
    guess = textual.highlight.guess_language

    def counting(code: str, path: str | None) -> str:
        guesses.append(path)
        return guess(code, path)

    monkeypatch.setattr(textual.highlight, "guess_language", counting)
    lines = "".join(f"-x{i} = {i}\n+x{i} = {i + 1}\n" for i in range(40))
    view = DiffView(f"--- a/app.py\n+++ b/app.py\n@@ -1,40 +1,40 @@\n{lines}", "app.py")
    code = view._code
    assert guesses == ["app.py"]
    # Every code line is coloured as Python: the numbers carry the number style.
    numbered = [line for line in code if "x" in line.plain]
    assert len(numbered) == 80
    assert all(line.spans for line in numbered)
