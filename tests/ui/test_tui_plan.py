"""The plan dialog in the app (N1): a proposed plan opens it; "approve, then auto-edit"
switches the mode through the mode switch (the status shows it) and the same turn writes;
"keep planning" sends the typed note; a snapshot of the dialog."""

from __future__ import annotations

from pathlib import Path

from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.screens.plan import PlanScreen

PLAN = "## Plan\n\n1. Write `notes.txt`.\n2. Check it with `cat notes.txt`."


def propose() -> dict:
    return reply(
        "Here is the plan.",
        tool_calls=[{"id": "p1", "name": "propose_plan", "arguments": {"plan": PLAN}}],
    )


def write() -> dict:
    arguments = {"path": "notes.txt", "content": "hello\n"}
    return reply(
        "Writing.", tool_calls=[{"id": "w1", "name": "write_file", "arguments": arguments}]
    )


async def open_plan(app, pilot, text: str) -> PlanScreen:
    await app.ready()
    await app.submit(text)
    await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan dialog")
    screen = app.screen
    await wait_until(pilot, lambda: screen.armed, what="plan dialog armed")
    return screen


async def test_approving_switches_to_auto_edit_and_the_turn_writes(
    make_app, scripted_in_process, workspace: Path
):
    """N1: `e` approves into auto-edit: the status says so and the write that follows runs."""
    server = scripted_in_process({"replies": [propose(), write(), reply("Done.")]})
    app = make_app(server, approval="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_plan(app, pilot, "add notes")
        await type_keys(pilot, "e")
        await wait_until(pilot, lambda: "mode auto-edit" in app.status_panel.text, what="shown")
        await wait_until(pilot, lambda: (workspace / "notes.txt").exists(), what="written")
        assert app.agent.approval_mode == "auto-edit"


async def test_keep_planning_sends_the_note(make_app, scripted_in_process, workspace: Path):
    """N1: `k`, a note and Enter: the model reads the note; the session stays in plan mode."""
    server = scripted_in_process({"replies": [propose(), reply("Revising.")]})
    app = make_app(server, approval="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_plan(app, pilot, "add notes")
        await type_keys(pilot, "k")
        await type_keys(pilot, *"cover the README")
        await type_keys(pilot, "enter")
        await wait_until(pilot, lambda: len(server.requests) == 2, what="the next call")
        assert "cover the README" in str(server.requests[-1].body["messages"])
        assert app.agent.approval_mode == "plan"


def test_plan_dialog_snapshot(snap_compare, make_app, scripted_in_process):
    """N1: what the plan dialog looks like, armed."""
    app = make_app(scripted_in_process({"replies": [propose(), reply("ok")]}), approval="plan")

    async def before(pilot):
        await open_plan(app, pilot, "add notes")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 32), run_before=before)
