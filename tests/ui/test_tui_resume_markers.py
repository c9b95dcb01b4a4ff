"""Resume shows what happened (issue 17 item 8): a stopped turn, a request that failed before
any answer and a turn that failed after one leave display rows (D1) that a resumed
transcript shows; no request ever carries them."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.markers import Marker

HELD = {"chunk_size": 6, "gate_after": 2}


def markers(app) -> list[str]:
    return [marker.text for marker in app.transcript.query(Marker)]


async def resume_it(app, pilot) -> None:
    """Leave the session for a new one, then come back to it."""
    session_id = app.agent.session_id
    await app.submit("/new")
    await pilot.pause()
    assert not markers(app)
    await app.resume_session(session_id)
    await pilot.pause()


async def test_a_stopped_turn_shows_stopped_after_a_resume(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [reply("Half of an answer", gate="g", **HELD), reply("Next.")]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await app.submit("go")
        await wait_until(pilot, lambda: app.status.turn_state.streamed_chars, what="the stream")
        await type_keys(pilot, "escape")
        await app.wait_for_turn()
        await resume_it(app, pilot)
        assert markers(app) == ["■ stopped"]
        await run_turn(pilot, "and then?")
        # The marker is display-only: the next request does not carry it.
        sent = server.requests_for()[-1].body["messages"]
        assert not [m for m in sent if "stopped" in str(m.get("content"))], sent


async def test_a_request_that_failed_shows_its_error_after_a_resume(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [{"status": 400, "error_message": "bad things happened"}]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await run_turn(pilot, "hello")
        await resume_it(app, pilot)
        # The error itself was the live error block; the row says what became of the message.
        assert markers(app) == ["◈ request failed: the message above is kept, not sent again"]


async def test_a_turn_that_failed_after_an_answer_began_shows_it_after_a_resume(
    make_app, scripted_in_process
):
    call = {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}
    server = scripted_in_process(
        {
            "replies": [
                reply("Reading.", tool_calls=[call]),
                {"status": 400, "error_message": "the model fell over"},
            ]
        }
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await run_turn(pilot, "read it")
        await resume_it(app, pilot)
        [line] = markers(app)
        assert line.startswith("◈ turn failed: ") and "the model fell over" in line, line


async def test_a_resumed_session_s_context_bar_starts_from_its_last_request(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply("First."), reply("Second.")]})
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await run_turn(pilot, "hello")
        status = app.status_panel.status
        assert status.context_used == 1280  # the scripted usage: 1,200 in, 80 out
        await resume_it(app, pilot)
        assert status.context_used == 1280 and status.input_tokens == 1200
        app.status_panel.refresh_status()
        assert "4%" in app.status_panel.text, app.status_panel.text


async def test_after_compact_a_resume_shows_the_compacted_context(
    scripted_in_process, hermes_home, workspace
):
    from ui.test_tui_compaction import compacting_app, echo_script, seed, summary_reply

    server = scripted_in_process(echo_script(summary_reply()))
    app = compacting_app(server, hermes_home, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await seed(pilot, 4)
        status = app.status_panel.status
        before = status.context_used
        await app.submit("/compact")
        await app.wait_for_turn()
        await pilot.pause()
        after = status.context_used
        assert 0 < after < before
        await resume_it(app, pilot)
        assert status.context_used == after, (status.context_used, after)
