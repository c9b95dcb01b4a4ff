"""In the TUI, "always this session" never answers for a protected path (H3)."""

from __future__ import annotations

from pathlib import Path

from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.screens.approval import ApprovalScreen


def write(call_id: str, path: str, content: str) -> dict:
    return reply(
        tool_calls=[
            {"id": call_id, "name": "write_file", "arguments": {"path": path, "content": content}}
        ]
    )


async def test_always_for_writes_still_asks_for_a_git_hook(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process(
        {
            "replies": [
                write("w1", "notes.txt", "hi\n"),
                write("w2", ".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
                write("w3", "more.txt", "also\n"),
                reply("Done."),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("write things")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="modal")
        assert not app.screen.request.protected
        await type_keys(pilot, "a")
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen.request.protected,
            what="the protected write's modal",
        )
        assert app.screen.request.summary.startswith("protected path (runs code on its own)")
        await type_keys(pilot, "n")
        await app.wait_for_turn()
        await pilot.pause()
    assert (workspace / "notes.txt").read_text() == "hi\n"
    assert not (workspace / ".git").exists()
    assert (workspace / "more.txt").read_text() == "also\n"  # "always" still covers the rest
