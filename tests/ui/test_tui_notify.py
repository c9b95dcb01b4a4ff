"""A word when a turn ends (issue 29 item 6): with the terminal blurred (AppBlur) or after a
long turn, the app writes the bell or a desktop notification, per `ui.notify`."""

from __future__ import annotations

from dataclasses import replace

from textual import events
from ui.tui_helpers import FakeClock, approval_dialog, reply, run_turn
from waits import wait_until

from hermes_tui.widgets.messages import AnswerBlock


def listening(app, notify: str, after: float = 30.0) -> list[str]:
    written: list[str] = []
    app.probes.terminal_write = written.append
    app.ui_settings = replace(app.ui_settings, notify=notify, notify_after_seconds=after)
    return written


async def test_a_turn_that_ends_while_the_terminal_is_blurred_notifies(
    make_app, scripted_in_process, monkeypatch
):
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("VTE_VERSION", raising=False)
    app = make_app(scripted_in_process({"replies": [reply("one"), reply("two")]}))
    written = listening(app, "desktop")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await run_turn(pilot, "focused and quick")
        assert written == []  # the user watched it end
        app.post_message(events.AppBlur())
        await wait_until(pilot, lambda: not app.app_focus, what="the terminal blurred")
        await run_turn(pilot, "while away")
        assert written == ["\x1b]9;hermes-tui: The turn finished.\x07"]


async def test_a_long_turn_rings_the_bell_even_when_focused(make_app, scripted_in_process):
    clock = FakeClock()
    held = reply("slow and steady", chunk_size=5, gate="g", gate_after=2)
    server = scripted_in_process({"replies": [held, reply("off")]})
    app = make_app(server)
    app.probes.clock = clock
    written = listening(app, "bell", after=10.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("long one")
        # The turn's first words are on screen, so its start (an earlier event) was taken
        # on the clock before it moves; `busy` alone comes before that event is handled.
        await wait_until(
            pilot,
            lambda: any("slow" in a.source for a in app.transcript.query(AnswerBlock)),
            what="the first words",
        )
        clock.advance(11.0)
        server.open_gate("g")
        await app.wait_for_turn()
        assert written == ["\a"]
        app.ui_settings = replace(app.ui_settings, notify="off")
        clock.advance(60.0)
        app.post_message(events.AppBlur())
        await run_turn(pilot, "off")
        assert written == ["\a"]


async def test_an_approval_waiting_while_blurred_notifies(
    make_app, scripted_in_process, monkeypatch
):
    monkeypatch.setenv("TMUX", "tmux-socket,1,0")
    monkeypatch.setenv("TERM", "tmux-256color")
    monkeypatch.delenv("VTE_VERSION", raising=False)
    calls = [{"id": "s1", "name": "run_shell", "arguments": {"command": "true"}}]
    app = make_app(
        scripted_in_process({"replies": [reply(tool_calls=calls), reply("ok")]}), approval="ask"
    )
    written = listening(app, "desktop")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        app.post_message(events.AppBlur())
        await wait_until(pilot, lambda: not app.app_focus, what="the terminal blurred")
        await app.submit("run it")
        await approval_dialog(pilot)
        assert written == ["\x1bPtmux;\x1b\x1b]9;hermes-tui: Approval needed: run_shell.\x07\x1b\\"]
