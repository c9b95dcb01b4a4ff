"""The approval mode from the keyboard (N1): shift+Tab cycles ask, auto-edit and plan, `/mode`
names any (yolo asks once), the panel and the status line show it, plan mode refuses file
changes in a real turn, and the mode is kept with the session and comes back on resume."""

from __future__ import annotations

from pathlib import Path

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from agent.modes import MODE_KEY, PLAN_NO_CHANGES
from hermes_tui.screens.approval import ApprovalScreen
from hermes_tui.screens.yolo import YoloScreen
from hermes_tui.widgets.messages import NoticeLine
from hermes_tui.widgets.tool_block import ToolBlock


def notices(app) -> list[str]:
    return [line.text for line in app.transcript.query(NoticeLine)]


def write_call(path: str = "plan.txt") -> dict:
    return reply(
        "Writing.",
        tool_calls=[
            {"id": "w1", "name": "write_file", "arguments": {"path": path, "content": "x\n"}}
        ],
    )


async def stored_mode(app) -> str | None:
    await app.db.flush()
    session = await app.db.get_session(app.agent.session_id)
    return (session.get("metadata") or {}).get(MODE_KEY)


async def test_shift_tab_cycles_and_plan_refuses_a_write(
    make_app, scripted_in_process, workspace: Path
):
    """N1: shift+Tab steps ask -> auto-edit -> plan; in plan a write is refused with a
    sentence the model reads, no dialog opens, and the session keeps the mode."""
    server = scripted_in_process({"replies": [write_call(), reply("Planned instead.")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        assert "mode ask" in app.status_panel.text
        seen = []
        for _ in range(3):
            await type_keys(pilot, "shift+tab")
            await pilot.pause()
            seen.append(str(app.agent.approval_mode))
        assert seen == ["auto-edit", "plan", "ask"]
        await type_keys(pilot, "shift+tab", "shift+tab")
        await wait_until(pilot, lambda: "mode plan" in app.status_panel.text, what="plan shown")
        assert "mode plan" in app.status_line.text
        assert any("plan mode: no file changes" in text for text in notices(app))
        await run_turn(pilot, "write a file")
        assert not isinstance(app.screen, ApprovalScreen)
        assert not (workspace / "plan.txt").exists()
        block = app.transcript.query_one(ToolBlock)
        assert block.state == "error" and PLAN_NO_CHANGES in block.output
        # The model read the sentence as the call's result.
        results = [m for m in server.requests[-1].body["messages"] if m.get("role") == "tool"]
        assert results and PLAN_NO_CHANGES in results[-1]["content"]
        assert await stored_mode(app) == "plan"


async def test_mode_command_and_yolo_confirmation(make_app, scripted_in_process):
    """N1: `/mode auto-edit` switches at once; `/mode yolo` asks first (n keeps the mode,
    y switches); an unknown mode is one sentence."""
    app = make_app(scripted_in_process({"replies": [reply("ok")]}), approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("/mode auto-edit")
        assert app.agent.approval_mode == "auto-edit"
        await app.submit("/mode yolo")
        await wait_until(pilot, lambda: isinstance(app.screen, YoloScreen), what="yolo dialog")
        await type_keys(pilot, "n")
        await wait_until(pilot, lambda: not isinstance(app.screen, YoloScreen), what="closed")
        assert app.agent.approval_mode == "auto-edit"
        await app.submit("/mode yolo")
        await wait_until(pilot, lambda: isinstance(app.screen, YoloScreen), what="yolo dialog")
        await type_keys(pilot, "y")
        await wait_until(pilot, lambda: app.agent.approval_mode == "yolo", what="yolo on")
        await wait_until(pilot, lambda: "mode yolo" in app.status_panel.text, what="shown")
        await app.submit("/mode nonsense")
        assert notices(app)[-1] == (
            "No mode called 'nonsense'; the modes are ask, auto-edit, plan, yolo."
        )
        # shift+Tab leaves yolo for the start of the cycle, never back into yolo.
        await type_keys(pilot, "shift+tab")
        await wait_until(pilot, lambda: app.agent.approval_mode == "ask", what="back to ask")


async def test_a_resumed_session_comes_back_in_its_mode(make_app, scripted_in_process):
    """N1: the mode is stored with the session: resuming it restores plan; one kept in yolo
    resumes in the config's mode and says so."""
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("/mode plan")
        await run_turn(pilot, "first session")
        planned = app.agent.session_id
        assert await stored_mode(app) == "plan"
        await app.submit("/new")
        await app.submit("/mode auto-edit")
        await run_turn(pilot, "second session")
        assert await stored_mode(app) == "auto-edit"
        await app.resume_session(planned)
        assert app.agent.approval_mode == "plan" and "mode plan" in app.status_panel.text
        # A session kept in yolo comes back in `agent.approval` (ask here).
        await app.db.update_session(planned, metadata={MODE_KEY: "yolo"})
        await app.resume_session(planned)
        assert app.agent.approval_mode == "ask"
        assert "This session ran in yolo mode; it resumes in ask" in notices(app)[-1]
