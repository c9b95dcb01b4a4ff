"""A snapshot of the model's todo list in the status panel (N2): fixed size, clock, home
and scripted model."""

from __future__ import annotations

from ui.test_tui_todo import PLAN, todo_reply
from ui.tui_helpers import reply, run_turn
from waits import wait_until

SIZE = (120, 36)


def test_n2_the_todo_list_in_the_panel(snap_compare, make_app, scripted_in_process):
    """N2: `Todo 1/3` over the items, each with its mark (☑ done, ▶ in progress, ☐ pending)."""
    long_item = {"text": "write the migration notes for the lexer split", "status": "pending"}
    server = scripted_in_process({"replies": [todo_reply([*PLAN, long_item]), reply("On it.")]})
    app = make_app(server)

    async def listed(pilot):
        await app.ready()
        await run_turn(pilot, "refactor the parser")
        await wait_until(pilot, lambda: "Todo 1/4" in app.status_panel.text, what="the list")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=listed)
