"""Snapshots of input while the agent works and of liveness (fixed clocks, gated streams)."""

from __future__ import annotations

from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.widgets.messages import AnswerBlock
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 36)


def gated(text: str = "Let me read the failing test first, then", **extra):
    return reply(text, chunk_size=8, gate="g", gate_after=3, **extra)


async def streaming(pilot, text: str = "fix the failing login test", tokens: int = 4) -> None:
    """Send `text` and wait until the stream reached its gate (`tokens` streamed)."""
    app = pilot.app
    await app.submit(text)
    await wait_until(pilot, lambda: app.transcript.query(AnswerBlock), what="streaming")
    await wait_until(
        pilot, lambda: f"~{tokens} tokens" in app.status_panel.text, what="the gated chunks"
    )


async def queue_three(pilot) -> None:
    app = pilot.app
    for text in ("then run the whole suite", "and update the changelog"):
        await type_keys(pilot, *text)
        await type_keys(pilot, "enter")
    # As a refused steer lands: behind the older items.
    app.input_queue.push("prefer pytest fixtures over setUp methods", "steer")
    app.turns.show_queue()
    await pilot.pause()


def test_queue_with_items_in_the_status_panel(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated()]})
    app = make_app(server)

    async def queued(pilot):
        await streaming(pilot)
        await queue_three(pilot)

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=queued)
    finally:
        server.open_gate("g")


def test_paused_queue_after_stop(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated()]})
    app = make_app(server)

    async def stopped(pilot):
        await streaming(pilot)
        await queue_three(pilot)
        await type_keys(pilot, "escape")
        await app.wait_for_turn()
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=stopped)
    finally:
        server.open_gate("g")


def test_steer_marker_in_the_transcript(snap_compare, make_app, scripted_in_process):
    calls = [{"id": "l1", "name": "list_dir", "arguments": {"path": "."}}]
    server = scripted_in_process(
        {
            "replies": [
                reply("Looking around.", tool_calls=calls, chunk_size=4, gate="g", gate_after=2),
                reply("Sticking to `app.py` as you asked: it prints a greeting."),
            ]
        }
    )
    app = make_app(server)

    async def steered(pilot):
        await streaming(pilot, "what does this project do?", tokens=1)
        await app.submit("/steer only look at app.py")
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=steered)


def test_stall_banner(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated()]})
    app = make_app(server)

    async def stalled(pilot):
        await streaming(pilot)
        await type_keys(pilot, *"are you still there?")
        await type_keys(pilot, "enter")
        # Five silent minutes, without waiting them.
        app.agent.activity.idle_for = lambda: 300.0
        await wait_until(pilot, lambda: app.stall_banner.display, what="the stall banner")

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=stalled)
    finally:
        server.open_gate("g")


def test_status_panel_running_tool(snap_compare, make_app, scripted_in_process):
    calls = [{"id": "t1", "name": "run_shell", "arguments": {"command": "sleep 30"}}]
    server = scripted_in_process(
        {"replies": [reply("Running the tests.", tool_calls=calls), reply("ok")]}
    )
    app = make_app(server, approval="yolo")

    async def running(pilot):
        await app.submit("run the tests")
        await wait_until(pilot, lambda: app.transcript.query(ToolBlock), what="tool block")
        app.probes.clock = lambda: 7.0
        await wait_until(
            pilot, lambda: "(7 s)" in app.status_panel.text, what="the tool's elapsed time"
        )

    assert snap_compare(app, terminal_size=SIZE, run_before=running)


def test_status_panel_stream_silent(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated()]})
    app = make_app(server)

    async def silent(pilot):
        await streaming(pilot)
        app.probes.clock = lambda: 12.0
        await wait_until(
            pilot, lambda: "stream silent for 12 s" in app.status_panel.text, what="silence"
        )

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=silent)
    finally:
        server.open_gate("g")
