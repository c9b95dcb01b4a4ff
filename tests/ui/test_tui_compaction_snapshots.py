"""Snapshots of compaction and search: fixed size, clock, home and scripted model."""

from __future__ import annotations

from ui.test_tui_compaction import compacting_app, echo_script, summary_reply, summary_tokens
from ui.tui_helpers import run_turn, type_keys
from waits import wait_until

SIZE = (120, 36)
QUESTIONS = ("what does app.py print?", "and README.md?", "rename the project", "add a test")


async def seed(pilot) -> None:
    for question in QUESTIONS:
        await run_turn(pilot, question)


def test_compaction_in_progress(snap_compare, scripted_in_process, hermes_home, workspace):
    server = scripted_in_process(echo_script(summary_reply(gate="s", gate_after=2)))
    app = compacting_app(server, hermes_home, workspace)

    async def compacting(pilot):
        await seed(pilot)
        await app.submit("/compact")
        await wait_until(pilot, lambda: summary_tokens(app) == 3, what="the first summary chunk")

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=compacting)
    finally:
        server.open_gate("s")


def test_compaction_marker_after_it(snap_compare, scripted_in_process, hermes_home, workspace):
    server = scripted_in_process(echo_script(summary_reply()))
    app = compacting_app(server, hermes_home, workspace)

    async def compacted(pilot):
        await seed(pilot)
        await app.submit("/compact")
        await app.wait_for_turn()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=compacted)


def test_search_results_in_the_sessions_panel(
    snap_compare, scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script())
    app = compacting_app(server, hermes_home, workspace)

    async def searched(pilot):
        await run_turn(pilot, "where does the zebra live?")
        await app.run_command("/new")
        await run_turn(pilot, "a zebra crossing in the test data")
        await app.run_command("/new")
        await run_turn(pilot, "nothing striped here")
        await type_keys(pilot, "ctrl+g", *"zebra")
        panel = app.sessions_panel
        # Each session once (issue 29): the question and its echoed answer make one hit.
        await wait_until(pilot, lambda: len(panel.hits) == 2, what="two sessions")

    assert snap_compare(app, terminal_size=SIZE, run_before=searched)
