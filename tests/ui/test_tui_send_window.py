"""The composer owns what is typed (Z1): Enter takes the text at once, keys act during a send.

A send is held on the app's `send_hold` probe (after Enter took the text, before the user's
message is shown), as a send into a long session is held by its cost.
"""

from __future__ import annotations

import asyncio
import random

from textual import events
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from agent.scripted.script import RequestInfo
from hermes_tui.widgets.messages import NoticeLine


class HeldSends:
    """The `send_hold` probe: each send waits until the test releases it."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Event] = []

    async def __call__(self) -> None:
        gate = asyncio.Event()
        self.waiting.append(gate)
        await gate.wait()

    @property
    def held(self) -> bool:
        """True while a send waits at the hook."""
        return any(not gate.is_set() for gate in self.waiting)

    def release(self) -> None:
        """Let every held send go on."""
        for gate in self.waiting:
            gate.set()


def sent_texts(server) -> list[str]:
    """The user text each model request ended with, in the order the server got them."""
    return [RequestInfo.from_body(r.wire, r.body).last_user_text for r in server.requests]


def keys_for(text: str) -> list[str]:
    """Pilot key names that type `text`."""
    return ["space" if char == " " else char for char in text]


def type_burst(app, text: str) -> None:
    """Send `text` as one burst of key events, as a terminal delivers fast typing (the
    caller waits for the composer to hold it).

    `pilot.press` waits for the whole process to go quiet after every key (two
    `wait_for_idle`s, each up to a second while the app or the in-process model server is
    busy), so on a loaded machine a word cost seconds; these keys reach the app as the
    driver's do (posted to it), and the caller's one wait is for what they do.
    """
    for key in keys_for(text):
        app.post_message(events.Key(key, " " if key == "space" else key))


async def test_text_typed_during_a_held_send_stays_in_the_composer(make_app, scripted_in_process):
    """Z1: the send took "bigping 1" at Enter; "lost1" typed while it is held stays typed,
    and the model gets the first message once, whole."""
    server = scripted_in_process({"replies": [reply("PONG")]})
    app = make_app(server)
    hold = HeldSends()
    async with app.run_test() as pilot:
        await app.ready()
        app.probes.send_hold = hold
        await type_keys(pilot, *keys_for("bigping 1"), "enter")
        await wait_until(pilot, lambda: hold.held, what="the send to reach the hook")
        assert app.composer.text == ""
        await type_keys(pilot, *keys_for("lost1"))
        await wait_until(pilot, lambda: app.composer.text == "lost1", what="the new draft")
        hold.release()
        await app.wait_for_turn()
        assert app.composer.text == "lost1"
        assert sent_texts(server) == ["bigping 1"]
        assert app.composer.sent == ["bigping 1"]  # the sent text is in the history


async def test_escape_during_a_held_send_stops_the_turn_before_the_model(
    make_app, scripted_in_process
):
    """Z1, T6: Esc while the send is held acts at once: the turn never starts, no request
    is made, the app is idle after it and the message is back in the empty composer."""
    server = scripted_in_process({"replies": [reply("never asked")]})
    app = make_app(server)
    hold = HeldSends()
    async with app.run_test() as pilot:
        await app.ready()
        app.probes.send_hold = hold
        await type_keys(pilot, *keys_for("stop me"), "enter")
        await wait_until(pilot, lambda: hold.held, what="the send to reach the hook")
        await type_keys(pilot, "escape")
        # The stop is taken while the send is still held: the key did not wait for it.
        assert hold.held and app.turns.stops == 1
        hold.release()
        await app.wait_for_turn()
        assert server.requests == []
        assert not app.busy and not app.working_line.running
        assert app.composer.text == "stop me"
        assert app.agent.session_id is None  # nothing was written for it
        shown = [row.text for row in app.transcript.query(NoticeLine)]
        assert shown[0] == "■ stopped", shown  # as any stopped turn ends
        assert "Stopped before the model was asked" in shown[1], shown
        assert "back in the input" in shown[1], shown


async def test_a_stopped_send_never_overwrites_a_newer_draft(make_app, scripted_in_process):
    """Z1, H7: a message stopped on its way goes to the head of the queue, paused, when
    the composer already holds newer typing; the draft stays exactly as typed."""
    server = scripted_in_process({"replies": [reply("unused")]})
    app = make_app(server)
    hold = HeldSends()
    async with app.run_test() as pilot:
        await app.ready()
        app.probes.send_hold = hold
        await type_keys(pilot, *keys_for("first"), "enter")
        await wait_until(pilot, lambda: hold.held, what="the send to reach the hook")
        await type_keys(pilot, *keys_for("draft"), "escape")
        hold.release()
        await app.wait_for_turn()
        assert app.composer.text == "draft"
        assert [item.text for item in app.input_queue.items] == ["first"]
        assert app.input_queue.paused and server.requests == []


async def test_a_line_sent_behind_a_stopped_send_waits_in_the_queue(make_app, scripted_in_process):
    """Z1, T6: Enter, Enter again, Esc, all while the first send is held: neither runs;
    the first comes back into the composer, the second waits in the paused queue."""
    server = scripted_in_process({"replies": [reply("never asked")], "loop": True})
    app = make_app(server)
    hold = HeldSends()
    async with app.run_test() as pilot:
        await app.ready()
        app.probes.send_hold = hold
        await type_keys(pilot, *keys_for("one"), "enter")
        await wait_until(pilot, lambda: hold.held, what="the send to reach the hook")
        await type_keys(pilot, *keys_for("two"), "enter", "escape")
        hold.release()
        await app.wait_for_turn()
        assert server.requests == []
        assert app.composer.text == "one"
        assert [item.text for item in app.input_queue.items] == ["two"]
        assert app.input_queue.paused


async def test_escape_after_the_send_reaches_the_worker_still_stops_it(
    make_app, scripted_in_process
):
    """Z1: a stop that lands after the worker was asked for, before it ran the turn, is
    not lost: the turn stops before any request (the Esc that used to be dropped)."""
    server = scripted_in_process({"replies": [reply("never asked")]})
    app = make_app(server)
    async with app.run_test() as pilot:
        await app.ready()
        agent = app.agent
        real_run = agent.run_turn

        def run_after_a_stop(text, **kwargs):
            # The stop arrives in the gap between the worker's start and the agent's turn.
            app.call_from_thread(app.turns.stop)
            return real_run(text, **kwargs)

        agent.run_turn = run_after_a_stop
        await type_keys(pilot, *keys_for("go"), "enter")
        await app.wait_for_turn()
        assert server.requests == []
        assert not app.busy and app.composer.text == "go"


async def test_random_keys_enters_and_turn_ends_lose_and_repeat_nothing(
    make_app, scripted_in_process
):
    """Z1 (seeded stress): typing, Enter, held and released sends and turn ends in random
    order; every sent line reaches the model exactly once, whole and in order, and the
    composer ends with exactly what was typed after the last Enter."""
    rng = random.Random(27)
    server = scripted_in_process({"replies": [reply("ok {n}")], "loop": True})
    app = make_app(server)
    hold = HeldSends()
    sent: list[str] = []
    draft = ""
    async with app.run_test() as pilot:
        await app.ready()
        app.probes.send_hold = hold
        for _ in range(60):
            action = rng.choice(["type", "type", "type", "enter", "release", "settle"])
            if action == "type":
                word = "".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 4)))
                text = f"{word} " if rng.random() < 0.3 else word
                # A burst, not pilot.press: its quiet-process wait after each key made this
                # test's time grow with the machine's load (it timed out at load ~20).
                type_burst(app, text)
                draft += text
            elif action == "enter" and draft.strip():
                await type_keys(pilot, "enter")
                sent.append(draft)
                draft = ""
            elif action == "release":
                hold.release()
            elif action == "settle":
                hold.release()
                await wait_until(
                    pilot, lambda: not app.turns.busy or hold.held, what="the turn to end"
                )
            await wait_until(pilot, lambda: app.composer.text == draft, what="the draft")
        app.probes.send_hold = None
        hold.release()
        await app.wait_for_turn()
        assert app.composer.text == draft
        assert sent_texts(server) == sent
        assert len(app.input_queue) == 0
