"""The proposed plan in the transcript (N1): its tool block shows the plan as Markdown, open,
on the turn and when the session is resumed; a snapshot of the block."""

from __future__ import annotations

from textual.widgets import Markdown
from ui.test_tui_plan import PLAN, open_plan, propose
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (100, 32)


def plan_blocks(app) -> list[ToolBlock]:
    return [b for b in app.transcript.query(ToolBlock) if b.tool_name == "propose_plan"]


def rendered(block: ToolBlock) -> bool:
    """True when the block shows the plan as Markdown: its heading a heading, not `##`."""
    view = block.plan_view
    if not isinstance(view, Markdown) or not view.display or view.source != PLAN:
        return False
    return any(type(child).__name__ == "MarkdownH2" for child in view.children)


async def test_n1_the_plan_shows_as_markdown_on_the_turn_and_on_resume(
    make_app, scripted_in_process
):
    """N1: after the answer to the plan, its block holds the plan rendered; a resume too."""
    server = scripted_in_process({"replies": [propose(), reply("Revising.")]})
    app = make_app(server, approval="plan")
    async with app.run_test(size=(120, 40)) as pilot:
        await open_plan(app, pilot, "add notes")
        await type_keys(pilot, "k", *"more", "enter")
        await app.wait_for_turn()
        await wait_until(pilot, lambda: plan_blocks(app) and rendered(plan_blocks(app)[0]))
        session = app.agent.session_id
        await app.submit("/new")
        await wait_until(pilot, lambda: not plan_blocks(app), what="a new session")
        await app.submit(f"/resume {session}")
        await wait_until(
            pilot,
            lambda: plan_blocks(app) and rendered(plan_blocks(app)[0]),
            what="the plan rendered on resume",
        )


def test_n1_the_plan_block_in_the_transcript(snap_compare, make_app, scripted_in_process):
    """N1: the plan under its tool block, as Markdown (heading, numbered list, code)."""
    server = scripted_in_process({"replies": [propose(), reply("Revising.")]})
    app = make_app(server, approval="plan")

    async def before(pilot):
        await open_plan(app, pilot, "add notes")
        await type_keys(pilot, "k", *"more", "enter")
        await app.wait_for_turn()
        await wait_until(pilot, lambda: plan_blocks(app) and rendered(plan_blocks(app)[0]))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=before)
