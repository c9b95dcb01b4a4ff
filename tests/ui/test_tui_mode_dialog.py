"""shift+Tab over an open dialog moves in the dialog and leaves the mode alone (N1)."""

from __future__ import annotations

from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.screens.approval import ApprovalScreen


async def test_shift_tab_over_the_approval_dialog_keeps_the_mode(make_app, scripted_in_process):
    """N1: with the approval dialog open, shift+Tab does not switch ask to auto-edit (which
    would change what the dialog is asking about); once it is answered, shift+Tab switches."""
    write = reply(
        "Writing.",
        tool_calls=[
            {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}
        ],
    )
    app = make_app(scripted_in_process({"replies": [write, reply("done")]}), approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("write a file")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the dialog")
        for _ in range(2):  # (three presses would cycle back to ask)
            await type_keys(pilot, "shift+tab")
            await pilot.pause()
            assert app.agent.approval_mode == "ask"
        assert "mode ask" in app.status_panel.text
        assert isinstance(app.screen, ApprovalScreen), "the dialog is still open"
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ApprovalScreen), what="closed")
        await app.wait_for_turn(timeout=30)
        await type_keys(pilot, "shift+tab")
        await wait_until(pilot, lambda: app.agent.approval_mode == "auto-edit", what="switched")
