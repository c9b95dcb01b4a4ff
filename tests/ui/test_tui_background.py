"""Background processes in the TUI (G2): the status panel's line, the /ps panel with its
stop key (and its snapshot), and quitting, which ends them and says which."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static
from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from agent import background as background_module
from agent.background import BackgroundTable
from agent.process_groups import group_alive
from hermes_tui.screens.processes import ProcessesScreen

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

PORT = 18765
"""Fixed, so the snapshot is: under the sandbox each command has a loopback of its own,
where this port is always free."""
SERVER = f"python3 -m http.server {PORT} --bind 127.0.0.1"
SIZE = (120, 36)


@pytest.fixture
def table(monkeypatch):
    """A fresh background table for this test; whatever still runs at its end is killed."""
    fresh = BackgroundTable(grace=0.5)
    monkeypatch.setattr(background_module, "BACKGROUND", fresh)
    yield fresh
    fresh.stop_all(grace=0.2)


def start_server(call_id: str = "s1") -> dict:
    arguments = {"command": SERVER, "background": True}
    return reply(tool_calls=[{"id": call_id, "name": "run_shell", "arguments": arguments}])


def detail(app) -> str:
    """The /ps panel's detail text."""
    return str(app.screen.query_one("#ps-detail-text", Static).content)


def sandboxed(app):
    """`app` with its commands under bubblewrap (the UI tests' config turns it off), where
    the fixed port is free; the test is skipped where bubblewrap does not run."""
    from agent.kinds import SandboxMode
    from agent.tools.sandbox import probe

    if not probe().works:
        pytest.skip("the fixed port needs the sandbox's own loopback (bubblewrap)")
    app.config = replace(app.config, sandbox=SandboxMode.AUTO)
    return app


async def test_g2_ps_lists_the_server_and_stops_it_and_quitting_ends_the_rest(
    make_app, scripted_in_process, table
):
    """G2: the panel's line names the port and command, /ps lists the process and `s`
    stops its group; quitting ends the one still running and says which."""
    replies = [start_server("s1"), reply("started"), start_server("s2"), reply("again")]
    app = sandboxed(make_app(scripted_in_process({"replies": replies}), approval="yolo"))
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await run_turn(pilot, "start the server")
        (first,) = table.processes()
        await wait_until(pilot, lambda: f":{PORT} python3" in app.status_panel.text, what="line")
        assert "1 background (/ps)" in app.status_panel.text

        await app.submit("/ps")
        await wait_until(pilot, lambda: isinstance(app.screen, ProcessesScreen), what="/ps")
        await type_keys(pilot, "s")
        await wait_until(pilot, lambda: not first.running, what="the server stopped")
        assert not group_alive(first.pgid)
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: "background" not in app.status_panel.text, what="gone")

        await run_turn(pilot, "start it again")
        second = table.processes()[1]
        assert second.running
    wait_until(lambda: not group_alive(second.pgid), timeout=5, what="the second server gone")
    assert app.stopped_background == f"Stopped 1 background process: bg2 ({SERVER})."


def test_g2_the_ps_panel(snap_compare, make_app, scripted_in_process, table):
    """G2: /ps lists each process with its state, age, ports and command, the highlighted
    one's last output below, and the stop key."""
    replies = [start_server(), reply("The server runs in the background.")]
    app = sandboxed(make_app(scripted_in_process({"replies": replies}), approval="yolo"))

    async def opened(pilot):
        await app.ready()
        await run_turn(pilot, "start the server")
        (entry,) = table.processes()
        entry.started_at -= 125  # `2 min`, the same on every run (whole minutes)
        await wait_until(pilot, lambda: "1 background" in app.status_panel.text, what="line")
        await app.submit("/ps")
        await wait_until(pilot, lambda: isinstance(app.screen, ProcessesScreen), what="/ps")
        await wait_until(pilot, lambda: f"listening on :{PORT}" in detail(app), what="the port")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=opened)


async def test_g2_quitting_with_a_background_process_asks_first(
    make_app, scripted_in_process, table
):
    """G2: with a background process running, the quit key first says what quitting stops
    and quits only when pressed again within a few seconds; the process then ends."""
    from ui.tui_helpers import FakeClock

    from hermes_tui.actions import QUIT_CONFIRM_SECONDS
    from hermes_tui.widgets.messages import NoticeLine

    arguments = {"command": "sleep 60", "background": True}
    call = {"id": "s1", "name": "run_shell", "arguments": arguments}
    replies = [reply(tool_calls=[call]), reply("started")]
    app = make_app(scripted_in_process({"replies": replies}), approval="yolo")
    clock = FakeClock()
    warned = "1 background process will be stopped: bg1 (sleep 60): {key} again quits."

    def warnings() -> int:
        text = warned.format(key=app.keys.shown("app.quit"))
        return sum(n.text == text for n in app.transcript.query(NoticeLine))

    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        app.probes.clock = clock
        await run_turn(pilot, "start a sleeper")
        (sleeper,) = table.running()
        await type_keys(pilot, "ctrl+q")
        await wait_until(pilot, lambda: warnings() == 1, what="the warning")
        assert app.return_code is None and sleeper.running
        clock.advance(QUIT_CONFIRM_SECONDS + 1)  # too late: it asks again
        await type_keys(pilot, "ctrl+q")
        await wait_until(pilot, lambda: warnings() == 2, what="the warning again")
        assert app.return_code is None
        clock.advance(1)
        await type_keys(pilot, "ctrl+q")
        await wait_until(pilot, lambda: app.return_code is not None, what="the app to quit")
    wait_until(lambda: not group_alive(sleeper.pgid), timeout=5, what="the sleeper gone")
    assert app.stopped_background == "Stopped 1 background process: bg1 (sleep 60)."
