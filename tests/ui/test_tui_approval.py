"""An approval is a deliberate answer (H2): pilot tests of the real app on the scripted server.

The dialog's quiet period is measured on a FakeClock that moves only when a test says so, so
"typed before the dialog armed" is certain, never a race with the machine's speed.
"""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.widgets import Button, Input, Static
from ui.tui_helpers import FakeClock, answer_approval, approval_dialog, reply, type_keys
from waits import wait_until

from agent.tools.approvals import AlwaysScope
from hermes_tui.screens.approval import UNARMED_HINT, ApprovalScreen
from hermes_tui.widgets.tool_block import ToolBlock

ARM = 0.5


def shell(command: str, call_id: str = "s1") -> dict:
    """A scripted reply that asks to run one shell command."""
    return reply(
        tool_calls=[{"id": call_id, "name": "run_shell", "arguments": {"command": command}}]
    )


def blocks(app) -> list[ToolBlock]:
    return list(app.transcript.query(ToolBlock))


def tool_messages(server) -> list[dict]:
    """Every tool result the model received, in order."""
    return [
        message
        for request in server.requests
        for message in request.body["messages"]
        if message["role"] == "tool"
    ]


async def test_typed_ahead_text_answers_nothing_and_lands_in_the_composer(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process({"replies": [shell("touch made.txt"), reply("ok")]})
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock, arm_seconds=ARM)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("make a file")
        dialog = await approval_dialog(pilot)
        # The user was typing "also add tests" as the dialog opened: "a" is "always" and "n"
        # is "no", Enter would press a button, and a paste and a Backspace come along too.
        await type_keys(pilot, *"also add testz", "backspace", "s", "enter", "escape")
        app.post_message(events.Paste(" and docs"))
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is dialog and not dialog.armed
        assert app.composer.text == "also add tests and docsy"
        assert not (workspace / "made.txt").exists()
        assert [b.state for b in blocks(app)] == ["awaiting"]
        assert str(dialog.query_one("#approval-hint", Static).content) == UNARMED_HINT
        assert all(button.disabled for button in dialog.query(Button))
        # A click before the quiet moment is ignored the same way.
        await pilot.click("#yes")
        assert app.screen is dialog
        # Once the quiet moment has passed with no typing, a key answers.
        clock.advance(ARM)
        await wait_until(pilot, lambda: dialog.armed, what="the dialog to arm")
        assert not any(button.disabled for button in dialog.query(Button))
        await pilot.press("n")
        await app.wait_for_turn()
        await pilot.pause()
        assert not (workspace / "made.txt").exists()
        assert app.composer.text == "also add tests and docsy", "the typed text is kept"
        assert [b.state for b in blocks(app)] == ["declined"]


async def test_every_key_in_the_quiet_period_starts_it_again(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process({"replies": [shell("touch made.txt"), reply("done")]})
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock, arm_seconds=ARM)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("make a file")
        dialog = await approval_dialog(pilot)
        clock.advance(ARM * 0.8)
        await pilot.press("x")
        clock.advance(ARM * 0.8)  # 1.6 x ARM since it opened, but only 0.8 x since the "x"
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is dialog and app.composer.text == "xy"
        clock.advance(ARM)
        await answer_approval(pilot, "y")
        await app.wait_for_turn()
        await pilot.pause()
        assert (workspace / "made.txt").exists()
        assert app.composer.text == "xy"
        [block] = blocks(app)
        assert block.state == "ok" and block.duration is not None


async def test_typing_after_it_armed_disarms_it_again(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process({"replies": [shell("touch made.txt"), reply("done")]})
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock, arm_seconds=ARM)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("make a file")
        await approval_dialog(pilot)
        clock.advance(ARM)
        dialog = await approval_dialog(pilot, armed=True)
        await pilot.press("h", "y")  # "hy...": the "h" was typing, so the "y" is too
        await pilot.pause()
        assert app.screen is dialog and not dialog.armed
        assert app.composer.text == "hy"
        clock.advance(ARM)
        await wait_until(pilot, lambda: dialog.armed, what="the dialog to arm again")
        await pilot.click("#yes")  # a click after the quiet moment answers
        await app.wait_for_turn()
        assert (workspace / "made.txt").exists()


async def test_always_for_ls_does_not_approve_rm_next(
    make_app, scripted_in_process, workspace: Path
):
    (workspace / "x").write_text("keep me\n")
    server = scripted_in_process(
        {
            "replies": [
                shell("ls", "s1"),
                shell("ls", "s2"),
                shell("rm x", "s3"),
                reply("I will not remove it."),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("look around")
        dialog = await approval_dialog(pilot, armed=True)
        assert dialog.request.always == AlwaysScope("run_shell", "ls")
        scope_text = str(dialog.query_one("#approval-always", Static).content)
        assert "this exact command" in scope_text and "any other command still asks" in scope_text
        await pilot.press("a")
        # The second `ls` runs unasked; `rm x` asks.
        rm_dialog = await approval_dialog(pilot, armed=True, after=dialog)
        assert "rm x" in rm_dialog.request.detail
        assert [b.state for b in blocks(app)] == ["ok", "ok", "awaiting"]
        await pilot.press("n")
        await app.wait_for_turn()
        assert (workspace / "x").exists()
        assert [b.state for b in blocks(app)] == ["ok", "ok", "declined"]


async def test_always_for_a_file_tool_says_it_covers_that_tool(make_app, scripted_in_process):
    call = {"id": "w1", "name": "write_file", "arguments": {"path": "n.txt", "content": "x"}}
    server = scripted_in_process({"replies": [reply(tool_calls=[call]), reply("ok")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("write")
        dialog = await approval_dialog(pilot, armed=True)
        scope_text = str(dialog.query_one("#approval-always", Static).content)
        assert "every write_file call, to any file in the workspace" in scope_text
        await pilot.press("y")
        await app.wait_for_turn()


async def test_a_no_with_a_reason_reaches_the_model(make_app, scripted_in_process, workspace: Path):
    server = scripted_in_process(
        {"replies": [shell("rm -rf build"), reply("I'll use make clean.")]}
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("clean up")
        dialog = await answer_approval(pilot, "r")
        reason = dialog.query_one("#approval-reason", Input)
        await wait_until(pilot, lambda: reason.has_focus, what="the reason input")
        # Typing the reason answers nothing: "y" and "a" are letters here.
        await type_keys(pilot, *"try make clean", "enter")
        await app.wait_for_turn()
        await pilot.pause()
        [result] = tool_messages(server)[-1:]
        assert "declined" in result["content"]
        assert "Their reason: try make clean" in result["content"]
        [block] = blocks(app)
        assert block.state == "declined" and block.duration is None
        assert app.composer.text == ""


async def test_escape_in_the_reason_step_is_a_plain_no(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [shell("rm -rf build"), reply("ok")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("clean up")
        await answer_approval(pilot, "r")
        await pilot.press("n", "o", "escape")
        await app.wait_for_turn()
        [result] = tool_messages(server)[-1:]
        assert result["content"] == "The user declined to run this tool call."


async def test_resume_shows_declined_and_ok_blocks(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [shell("rm x", "s1"), shell("true", "s2"), reply("fine"), reply("hi")]}
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("go")
        first = await answer_approval(pilot, "n")
        await answer_approval(pilot, "y", after=first)
        await app.wait_for_turn()
        live = [(b.state, b.duration is None) for b in blocks(app)]
        assert live == [("declined", True), ("ok", False)]
        session_id = app.agent.session_id
        await app.run_command("/new")
        assert blocks(app) == []
        await app.resume_session(session_id)
        await pilot.pause()
        resumed = [(b.state, b.duration is None) for b in blocks(app)]
        assert resumed == live


async def test_the_dialog_opens_unarmed_with_its_default_delay(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [shell("true"), reply("ok")]})
    app = make_app(server, approval="ask", arm_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("go")
        dialog = await approval_dialog(pilot)
        assert isinstance(dialog, ApprovalScreen) and dialog.arm_seconds == 0.5


async def test_a_call_always_cannot_cover_offers_no_always():
    from textual.app import App

    from agent.tools.registry import ApprovalRequest

    answers: list = []
    dialog = ApprovalScreen(ApprovalRequest("write_file", "write_file .envrc", "+x"))

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(dialog, callback=answers.append)

    async with Host().run_test() as pilot:
        await wait_until(pilot, lambda: dialog.is_mounted, what="the dialog")
        assert not dialog.query("#always") and not dialog.query("#approval-always")
        await wait_until(pilot, lambda: dialog.armed, timeout=5, what="the dialog to arm")
        await pilot.press("a")
        await pilot.pause()
        assert answers == [] and not dialog.armed, "'a' is typing here, not an answer"


async def test_a_lone_answer_key_typed_too_early_is_asked_again_not_typed(
    make_app, scripted_in_process, workspace: Path
):
    """H2 (issue 29 item 9): a `y` alone during the wait is an early answer: it never lands in
    the composer, and the armed dialog says to press it again; a second key makes it text."""
    server = scripted_in_process({"replies": [shell("touch made.txt"), reply("ok")]})
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock, arm_seconds=ARM)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("make a file")
        dialog = await approval_dialog(pilot)
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is dialog and not dialog.armed and app.composer.text == ""
        clock.advance(ARM)
        await wait_until(pilot, lambda: dialog.armed, what="the dialog to arm")
        hint = str(dialog.query_one("#approval-hint", Static).content)
        assert hint.startswith("You pressed y before the dialog was ready: press y again.")
        assert app.composer.text == ""
        await pilot.press("y")
        await app.wait_for_turn()
        assert (workspace / "made.txt").exists() and app.composer.text == ""


async def test_an_answer_key_that_starts_a_word_stays_text(
    make_app, scripted_in_process, workspace: Path
):
    """Item 9: `ye` and `n` + paste are typing: every key goes to the composer, in order,
    and the armed hint asks for nothing again."""
    server = scripted_in_process({"replies": [shell("touch made.txt"), reply("ok")]})
    clock = FakeClock()
    app = make_app(server, approval="ask", approval_clock=clock, arm_seconds=ARM)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("make a file")
        dialog = await approval_dialog(pilot)
        await pilot.press("y", "e")
        app.post_message(events.Paste("s"))
        await pilot.pause()
        assert app.composer.text == "yes"
        clock.advance(ARM)
        await wait_until(pilot, lambda: dialog.armed, what="the dialog to arm")
        assert "again" not in str(dialog.query_one("#approval-hint", Static).content)
        await pilot.press("n")
        await app.wait_for_turn()
        assert not (workspace / "made.txt").exists() and app.composer.text == "yes"
