"""Snapshots of the layout after a turn, fresh and after a resize (issue 17 item 4): the
pairs at 80x24 and at 140x40 must be the same picture."""

from __future__ import annotations

import pytest
from ui.conftest import SNAPSHOT_ROOT
from ui.tui_helpers import reply, run_turn, settled_screen

CODE = "```python\nvalue = compute(" + ", ".join(f"argument_{n}" for n in range(12)) + ")\n```"
TABLE = "| name | what it is |\n|---|---|\n| demo | the built-in demo model |"
ANSWER = f"A table and some code.\n\n{TABLE}\n\n{CODE}\n\nThat is all."
CASES = {
    "fresh-80x24": ((80, 24), None),
    "resized-80x24": ((140, 40), (80, 24)),
    "fresh-140x40": ((140, 40), None),
    "resized-140x40": ((80, 24), (140, 40)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_layout_after_a_turn(snap_compare, make_app, scripted_in_process, case):
    start, end = CASES[case]
    app = make_app(scripted_in_process({"replies": [reply(ANSWER)]}))

    async def turn(pilot):
        await run_turn(pilot, "show me a table and some code")
        if end is not None:
            await pilot.resize_terminal(*end)
        await settled_screen(pilot)  # the picture at rest, not a frame into its layout

    assert snap_compare(app, terminal_size=end or start, run_before=turn)


@pytest.mark.parametrize("size", ["80x24", "140x40"])
def test_fresh_and_resized_snapshots_are_the_same_picture(size):
    folder = SNAPSHOT_ROOT / "test_tui_layout_snapshots"
    fresh = folder / f"test_layout_after_a_turn[fresh-{size}].svg"
    resized = folder / f"test_layout_after_a_turn[resized-{size}].svg"
    assert fresh.read_text() == resized.read_text()
