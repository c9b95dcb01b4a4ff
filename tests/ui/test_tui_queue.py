"""Input while the agent works, through the TUI: the queue, steers, stop and resume (T1-T6)."""

from __future__ import annotations

import threading

import pytest
from textual import events
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import AnswerBlock, ErrorBlock, NoticeLine, UserMessage


def gated(text: str = "Streaming a long answer", **extra):
    """A reply that streams one text chunk and then waits for gate `g`."""
    return reply(text, chunk_size=5, gate="g", gate_after=2, **extra)


def gated_tool(**extra):
    """A reply that streams a bit, waits at gate `g`, then asks for list_dir."""
    calls = [{"id": "l1", "name": "list_dir", "arguments": {"path": "."}}]
    return reply("Looking.", chunk_size=3, gate="g", gate_after=2, tool_calls=calls, **extra)


def last_user(request) -> str:
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


def user_texts(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


def queued(app) -> list[tuple[str, str]]:
    return [(item.text, item.origin) for item in app.input_queue.items]


def dump(app) -> list[tuple[str, str]]:
    """The transcript as (row type, text): the message of a failed assertion."""
    return [
        (type(w).__name__, getattr(w, "text", "") or getattr(w, "message", ""))
        for w in app.transcript.children
    ]


def rows(app, kind) -> list:
    return list(app.transcript.query(kind))


async def start_streaming(pilot, text: str = "one") -> None:
    app = pilot.app
    await app.submit(text)
    await wait_until(pilot, lambda: rows(app, AnswerBlock), what="the answer streaming")


async def type_and_send(pilot, text: str) -> None:
    await type_keys(pilot, *text, "enter")


async def test_text_typed_during_a_turn_is_queued_and_runs_after_it(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated(), reply("Second answer.")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_and_send(pilot, "two")
        assert queued(app) == [("two", "queued")]
        assert app.composer.text == ""
        view = app.status_panel.queue_view
        assert view.display and "two" in str(view.list.get_option_at_index(0).prompt)
        assert len(server.requests) == 1
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        assert [r.text for r in rows(app, UserMessage)] == ["one", "two"]
        assert len(server.requests) == 2
        assert last_user(server.requests[1]) == "two"
        assert queued(app) == [] and not view.display


async def test_busy_input_mode_steer_delivers_into_the_running_turn(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated_tool(), reply("Done, with tests first.")]})
    app = make_app(server, busy_input_mode="steer")
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_and_send(pilot, "run the tests first")
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        assert len(server.requests) == 2
        assert user_texts(server.requests[1]) == ["one", "run the tests first"]
        assert queued(app) == []
        markers = [m.text for m in rows(app, Marker) if m.kind == "steer"]
        assert markers == ["◈ steered: run the tests first"]


async def test_the_steer_key_sends_the_composer_text_as_a_steer(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated_tool(), reply("ok")]})
    app = make_app(server)  # Enter queues; the key steers
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_keys(pilot, *"use pytest")
        await type_keys(pilot, "ctrl+s")
        assert app.composer.text == "" and queued(app) == []
        server.open_gate("g")
        await app.wait_for_turn()
        assert user_texts(server.requests[1]) == ["one", "use pytest"]


async def test_command_shaped_steer_text_is_delivered_as_text(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated_tool(), reply("ok")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await app.submit("/steer /stop and explain")
        server.open_gate("g")
        await app.wait_for_turn()
        assert app.status_panel.status.state == "idle"
        assert user_texts(server.requests[1]) == ["one", "/stop and explain"]


@pytest.mark.parametrize("when", ["refused after the seal", "pending at the seal"])
async def test_a_late_steer_goes_behind_older_queued_input_exactly_once(
    make_app, scripted_in_process, when
):
    server = scripted_in_process({"replies": [gated(), reply("second"), reply("third")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        agent = app.agent
        reached, release = threading.Event(), threading.Event()

        def hold() -> None:
            reached.set()
            release.wait(10)

        if when == "pending at the seal":
            agent.probes.before_seal = hold
        else:
            seal = agent.inbox.seal_and_drain

            def seal_then_hold() -> str | None:
                drained = seal()
                hold()
                return drained

            agent.inbox.seal_and_drain = seal_then_hold
        await start_streaming(pilot)
        server.open_gate("g")
        await wait_until(pilot, reached.is_set, what="the turn at its terminal path")
        assert app.busy
        await type_and_send(pilot, "older")
        await app.submit("/steer late")
        expected = [("older", "queued")]
        if when == "refused after the seal":
            expected.append(("late", "steer"))
        assert queued(app) == expected
        release.set()
        await app.wait_for_turn()
        await pilot.pause()
        assert [last_user(r) for r in server.requests] == ["one", "older", "late"], dump(app)
        every_user_text = [t for r in server.requests for t in user_texts(r)]
        assert every_user_text.count("late") == 1
        assert queued(app) == []


async def test_stop_pauses_the_queue_and_resume_runs_it(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated(), reply("second"), reply("third")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_and_send(pilot, "two")
        await type_and_send(pilot, "three")
        await type_keys(pilot, "escape")
        await app.wait_for_turn()
        await pilot.pause()
        assert app.input_queue.paused and queued(app) == [("two", "queued"), ("three", "queued")]
        assert len(server.requests) == 1
        assert "■ stopped" in [n.text for n in rows(app, NoticeLine)]
        assert rows(app, AnswerBlock), "the partial answer stays on screen"
        view = app.status_panel.queue_view
        assert "paused" in str(view.query_one("#queue-title").content)
        await type_keys(pilot, "ctrl+r")
        await wait_until(pilot, lambda: not app.busy and not queued(app), what="the queue ran")
        assert [last_user(r) for r in server.requests] == ["one", "two", "three"]
        assert not app.input_queue.paused and queued(app) == []


async def test_sending_after_a_stop_runs_first_then_the_paused_queue(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [gated(), reply("a"), reply("b")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_and_send(pilot, "two")
        await app.submit("/stop")
        await app.wait_for_turn()
        await pilot.pause()
        assert app.input_queue.paused and queued(app) == [("two", "queued")]
        await type_and_send(pilot, "fresh")
        await app.wait_for_turn()
        assert [last_user(r) for r in server.requests] == ["one", "fresh", "two"]


async def test_queued_items_can_be_removed_and_pulled_back_for_editing(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [gated(), reply("done")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        for text in ("alpha", "beta", "gamma", "delta"):
            await type_and_send(pilot, text)
        await type_keys(pilot, "f5")
        assert app.focused is app.status_panel.queue_view.list
        await type_keys(pilot, "down", "delete")
        assert [t for t, _ in queued(app)] == ["alpha", "gamma", "delta"]
        await type_keys(pilot, "e")
        assert app.focused is app.composer
        assert app.composer.text == "gamma"
        await app.submit("/queue rm 2")
        assert [t for t, _ in queued(app)] == ["alpha"]
        await app.submit("/queue edit 1")
        assert app.composer.text == "gamma\nalpha" and queued(app) == []
        server.open_gate("g")
        await app.wait_for_turn()
        assert len(server.requests) == 1, "nothing was left to run"
        assert app.composer.text == "gamma\nalpha"


async def test_text_a_turn_refused_goes_back_into_the_composer(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("never sent")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        app.agent.skew_guard.fingerprint = "an older install"
        await type_and_send(pilot, "please fix it")
        await app.wait_for_turn()
        await pilot.pause()
        assert app.composer.text == "please fix it"
        assert "restart" in rows(app, ErrorBlock)[-1].message
        assert server.requests == []


async def test_keys_typed_just_before_enter_or_the_steer_key_are_never_cut(
    make_app, scripted_in_process
):
    # A burst, as a terminal delivers fast typing or tmux send-keys: the Enter and ctrl+s
    # bindings must read the composer after every character queued before them.
    server = scripted_in_process({"replies": [gated_tool(), reply("ok")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()

        async def burst(text: str, key: str) -> None:
            for char in text:
                app.post_message(events.Key(char, char))
            app.post_message(events.Key(key, None))
            await wait_until(pilot, lambda: app.composer.text == "", what=f"{key} sent")

        await burst("task one", "enter")
        await wait_until(pilot, lambda: rows(app, AnswerBlock), what="streaming")
        await burst("use pytest", "ctrl+s")
        server.open_gate("g")
        await app.wait_for_turn()
        assert [r.text for r in rows(app, UserMessage)] == ["task one"]
        assert user_texts(server.requests[1]) == ["task one", "use pytest"]


async def test_a_steer_during_a_plain_answer_says_truly_where_it_went(
    make_app, scripted_in_process
):
    """T3 (issue 29 item 10): a steer the model cannot take before a plain answer ends is
    never promised "after the current step" alone, and its end notice names its place in
    the queue: behind the item queued before it."""
    server = scripted_in_process({"replies": [gated(), reply("second"), reply("third")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await start_streaming(pilot)
        await type_and_send(pilot, "older")
        await app.submit("/steer late")
        said = [n.text for n in rows(app, NoticeLine)]
        assert any("if this answer is its last, the steer is sent as a message" in t for t in said)
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()
        said = [n.text for n in rows(app, NoticeLine)]
        assert (
            "The turn ended before your steer reached the model: it waits in the queue, "
            "behind 1 item queued before it."
        ) in said, said
        assert [last_user(r) for r in server.requests] == ["one", "older", "late"]
