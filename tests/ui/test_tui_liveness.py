"""Liveness in the TUI: the stall banner (L2), the honest turn state (L3), working sessions (L1)."""

from __future__ import annotations

import logging

from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.widgets.messages import AnswerBlock
from hermes_tui.widgets.tool_block import ToolBlock


class FakeClock:
    """The app's elapsed clock, moved by hand."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


async def test_the_stall_banner_warns_once_only_with_waiting_input_and_clears(
    make_app, scripted, caplog
):
    """L2: a silent busy turn warns once, only while input waits, and activity clears it.

    The silence is the agent's activity clock moved by hand and the stream is held at a gate,
    so no step of the test races a real stall: a loaded machine may take any time to type
    the waiting input, and the stream stays silent until the banner has shown.
    """
    caplog.set_level(logging.WARNING, logger="hermes_tui.liveness")
    # Two chunks, held at a gate; opened, one more chunk, then a long stall the test stops.
    text = "Start. " + "steady " * 20
    held = reply(text, chunk_size=7, gate="resume", gate_after=2, stall=60, stall_after=3)
    server = scripted({"replies": [held, reply("second")]})
    app = make_app(server, stall_timeout_seconds=0.6)
    async with app.run_test(size=(120, 40)) as pilot:
        banner = app.stall_banner
        await app.ready()
        clock = app.agent.activity.clock = FakeClock()
        await app.submit("go")
        await wait_until(pilot, lambda: app.transcript.query(AnswerBlock), what="first chunk")
        clock.t = 5.0  # five silent seconds, well past the 0.6 s timeout
        ticks = app.probes.ticks
        await wait_until(pilot, lambda: app.probes.ticks >= ticks + 2, what="two ticks of silence")
        assert not banner.display and banner.shown == 0, "no banner without waiting input"
        await type_keys(pilot, *"next")
        await type_keys(pilot, "enter")
        shown = await wait_until(pilot, lambda: banner.display and banner.text, what="the banner")
        assert "No activity for 5 s while your message waits: /stop or /new" in shown
        server.open_gate("resume")  # one chunk: activity at t=5, so no silence any more
        await wait_until(pilot, lambda: not banner.display, what="activity to clear it")
        assert app.turns.busy and banner.shown == 1  # cleared by activity, not the turn's end
        app.turns.stop()
        await app.wait_for_turn()
        assert not banner.display and banner.shown == 1
        stalls = [r for r in caplog.records if "turn stalled" in r.getMessage()]
        assert len(stalls) == 1  # one WARNING for the one episode


async def test_the_status_panel_shows_the_running_tool_and_for_how_long(make_app, scripted):
    calls = [{"id": "t1", "name": "run_shell", "arguments": {"command": "sleep 30"}}]
    server = scripted({"replies": [reply("Running.", tool_calls=calls), reply("done")]})
    app = make_app(server, approval="yolo")
    async with app.run_test(size=(120, 40)) as pilot:
        clock = app.probes.clock = FakeClock()
        await app.submit("run it")
        await wait_until(pilot, lambda: app.transcript.query(ToolBlock), what="the tool")
        clock.t = 7.0
        await wait_until(
            pilot,
            lambda: "running tool run_shell (7 s)" in app.status_panel.text,
            what="the running tool in the status panel",
        )
        await type_keys(pilot, "escape")
        await app.wait_for_turn()
        await pilot.pause()
        assert "● stopped" in app.status_panel.text


async def test_a_silent_stream_counts_up_and_the_session_shows_working(make_app, scripted):
    silent = reply("Partial answer", chunk_size=4, gate="g", gate_after=3)
    server = scripted({"replies": [silent]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        clock = app.probes.clock = FakeClock()
        await app.submit("go")
        # "Part", "ial " then the gate: 8 characters, about 2 tokens, counted live.
        await wait_until(
            pilot, lambda: "~2 tokens streamed" in app.status_panel.text, what="live tokens"
        )
        assert "writing · 0 s" in app.status_panel.text
        clock.t = 12.0
        await wait_until(
            pilot,
            lambda: "stream silent for 12 s" in app.status_panel.text,
            what="silence in the status panel",
        )
        option = app.sessions_panel.option_list.get_option_at_index(0)
        assert "working, 12 s" in str(option.prompt)
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        option = app.sessions_panel.option_list.get_option_at_index(0)
        assert "working" not in str(option.prompt) and "● idle" in app.status_panel.text


async def test_the_busy_session_row_is_redrawn_only_when_its_words_change(make_app, scripted):
    """L1's `working, N s` is asked for on every tick and batch; an unchanged row (the
    seconds have not moved) does not redraw the sessions list, which re-renders every row."""
    silent = reply("Partial answer", chunk_size=4, gate="g", gate_after=3)
    server = scripted({"replies": [silent]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        clock = app.probes.clock = FakeClock()
        await app.submit("go")
        await wait_until(
            pilot, lambda: "~2 tokens streamed" in app.status_panel.text, what="live tokens"
        )
        option_list = app.sessions_panel.option_list
        await wait_until(
            pilot,
            lambda: "working, 0 s" in str(option_list.get_option_at_index(0).prompt),
            what="the busy row",
        )
        redraws = 0
        clear_caches = option_list._clear_caches

        def counting_clear_caches() -> None:
            nonlocal redraws
            redraws += 1
            clear_caches()

        option_list._clear_caches = counting_clear_caches
        ticks = app.probes.ticks
        await wait_until(pilot, lambda: app.probes.ticks >= ticks + 3, what="three ticks")
        assert redraws == 0, f"the unchanged busy row redrew the sessions list {redraws} times"
        clock.t = 12.0  # the words change: the row is redrawn, once a tick at most
        ticks = app.probes.ticks
        await wait_until(pilot, lambda: app.probes.ticks >= ticks + 2, what="two more ticks")
        assert "working, 12 s" in str(option_list.get_option_at_index(0).prompt)
        assert redraws == 1
        server.open_gate("g")
        await app.wait_for_turn()
