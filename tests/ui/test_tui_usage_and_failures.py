"""The status panel's counts tell the truth, and a failed request's text stays the user's
(issue 16: S7, the context meter, T7; the sessions panel's row with a long model name)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ui.tui_helpers import FIXED_NOW, quick_probes, reply, run_turn, type_keys
from waits import wait_until

from agent import events as ev
from agent.config import load_config
from agent.kinds import CallPurpose
from agent.messages import model_visible
from hermes_tui.app import HermesApp
from hermes_tui.bridge import Bridge
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import NoticeLine
from hermes_tui.widgets.sessions_panel import session_label

SIZE = (120, 36)
DOWN = {"status": 500, "error_message": "model crashed"}


def app_on(hermes_home: Path, workspace: Path, provider: dict, model: str = "test-model"):
    """An app whose one provider is `provider` (no retries: a failure ends the turn)."""
    config = {
        "model": f"scripted:{model}",
        "providers": {"scripted": {"api_key": "test", **provider}},
        "agent": {"retry_base_seconds": 0.01, "max_retries": 1},
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    probes = quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0)
    return HermesApp(load_config(), workspace=workspace, probes=probes)


def status_text(app: HermesApp) -> str:
    return app.status_panel.text


async def test_the_meter_counts_cached_input_on_the_anthropic_wire(
    scripted, hermes_home, workspace
):
    # llama.cpp's /v1/messages: 18 new input tokens, 1,324 read from its prompt cache.
    usage = {"input_tokens": 18, "cache_read_input_tokens": 1324, "output_tokens": 10}
    server = scripted({"replies": [{"text": "hi", "usage": usage}]})
    provider = {"kind": "anthropic", "base_url": server.anthropic_base_url, "context_window": 4096}
    app = app_on(hermes_home, workspace, provider)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "hello")
        assert app.status_panel.status.context_used == 18 + 1324 + 10
        assert " 33%" in status_text(app), status_text(app)  # not 1 %


async def test_an_unknown_window_is_shown_unknown_never_assumed(scripted, hermes_home, workspace):
    server = scripted({"replies": [reply("hi")]})
    app = app_on(hermes_home, workspace, {"kind": "openai", "base_url": server.openai_base_url})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.status_panel.status.model, what="the model shown")
        assert "window unknown" in status_text(app)
        await run_turn(pilot, "hello")
        text = status_text(app)
        assert "1.3k · window unknown" in text, text  # 1,200 in + 80 out, over nothing
        assert "%" not in text.split("context", 1)[1].split("Turn", 1)[0]


async def test_a_stopped_calls_estimate_is_marked(make_app, scripted):
    server = scripted({"replies": [reply("x" * 4000, chunk_size=40, gate="g", gate_after=3)]})
    app = make_app(server)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.submit("write a lot")
            await wait_until(
                pilot, lambda: app.turns.busy and app.agent.control.phase, what="the turn"
            )
            await wait_until(
                pilot,
                lambda: app.status.turn_state.streamed_chars > 0,
                what="the first streamed text",
            )
            await type_keys(pilot, "escape")
            await app.wait_for_turn()
            await pilot.pause()
            text = status_text(app)
            # The server sent no usage: the counts are the request's prompt and an estimate
            # of what streamed, and the panel says they are estimates.
            assert "in ~" in text and "out ~" in text, text
            assert "~" in text.split("context", 1)[1].split("Turn", 1)[0], text
    finally:
        server.open_gate("g")


async def test_exact_counts_carry_no_mark(make_app, scripted):
    server = scripted({"replies": [reply("hi")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "hello")
        assert "in 1.2k out 80" in status_text(app), status_text(app)
        assert "~" not in status_text(app).split("Turn", 1)[0]


async def test_a_withheld_message_is_shown_and_offered_back(scripted, hermes_home, workspace):
    server = scripted({"replies": [DOWN, reply("finally")]})
    app = app_on(hermes_home, workspace, {"kind": "openai", "base_url": server.openai_base_url})
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "the first try")
        markers = [m.text for m in app.transcript.query(Marker) if m.kind == "request_failed"]
        assert markers == ["◈ request failed: the message above is kept, not sent again"]
        # Never lost: it is back in the input, to send on purpose.
        assert app.composer.text == "the first try"
        app.composer.load_text("")
        await run_turn(pilot, "another question")
        # Never merged into the next turn.
        last = server.requests[-1].body
        users = [m["content"] for m in last["messages"] if m["role"] == "user"]
        assert users == ["another question"]
        visible = [m.content for m in model_visible(app.agent.messages)]
        assert visible == ["another question", "finally"]


async def test_a_failed_turns_marker_comes_before_its_notice(scripted, hermes_home, workspace):
    # The order must not hang on when the bridge's frame timer fires. An hour-long frame
    # keeps every event after the turn's first batch in the bridge until someone flushes it:
    # the end of the work must post them ahead of itself, never leave them for a timer that
    # could fire behind it while the end (a send job, off the message loop) adds its notice.
    server = scripted({"replies": [DOWN]})
    app = app_on(hermes_home, workspace, {"kind": "openai", "base_url": server.openai_base_url})
    app.bridge = Bridge(app, frame_seconds=3600)
    held_at_the_end: list[bool] = []
    ended = app.turns.ended

    async def ending(message):
        held_at_the_end.append(app.bridge.pending)
        await ended(message)

    app.turns.ended = ending  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "the first try")
        assert held_at_the_end == [False]
        rows = [
            row.text if isinstance(row, Marker) else str(row.render())
            for row in app.transcript.walk_children()
            if isinstance(row, (Marker, NoticeLine))
        ]
        failed = next(i for i, row in enumerate(rows) if "request failed" in row)
        offered = next(i for i, row in enumerate(rows) if "back in the input" in row)
        assert failed < offered, rows


async def test_a_withheld_message_never_overwrites_a_draft(scripted, hermes_home, workspace):
    gated = {**DOWN, "gate": "g"}
    server = scripted({"replies": [gated]})
    app = app_on(hermes_home, workspace, {"kind": "openai", "base_url": server.openai_base_url})
    try:
        async with app.run_test(size=SIZE) as pilot:
            await app.submit("the first try")
            await wait_until(pilot, lambda: server.requests, what="the request")
            app.composer.load_text("a draft I am writing")
            server.open_gate("g")
            await app.wait_for_turn()
            await pilot.pause()
            assert app.composer.text == "a draft I am writing"
            assert any("↑ in the input brings back" in n for n in notices(app)), notices(app)
    finally:
        server.open_gate("g")


def notices(app: HermesApp) -> list[str]:
    return [n.text for n in app.transcript.query(NoticeLine)]


def test_a_gguf_path_as_model_keeps_the_session_row_to_two_lines():
    session = {
        "title": "Local model work",
        "model": "/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "last_activity_at": FIXED_NOW - 300,
    }
    label = session_label(session, current=True, now=FIXED_NOW)
    lines = label.plain.split("\n")
    assert len(lines) == 2
    assert all(len(line) <= 25 for line in lines), lines  # the panel's row: 28 less border
    assert lines[1].startswith("  5m ago · SmolLM2-135M")
    assert lines[1].endswith("…")
    assert "/srv/models" not in label.plain


async def test_a_summary_call_counts_in_the_totals_but_not_on_the_meter(make_app, scripted):
    server = scripted({"replies": [reply("hi")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "hello")
        status = app.status_panel.status
        before = status.context_used
        # A compaction's summary call: its prompt was the old history, not the context now.
        summary = ev.UsageUpdated(
            5000, 300, 6200, 380, purpose=CallPurpose.SUMMARY, context_tokens=5300
        )
        await app.router.apply([summary])
        assert (status.input_tokens, status.output_tokens) == (6200, 380)
        assert status.context_used == before == 1280


async def test_a_gguf_path_as_model_keeps_the_status_panels_model_to_one_line(make_app, scripted):
    server = scripted({"replies": [reply("hi")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = app.status_panel
        panel.status.model = "llama:/srv/models/SmolLM2-135M-Instruct.Q4_1.gguf"
        panel.refresh_status()
        body = str(panel.query_one("#status-body").content).split("\n")
        assert body[1] == "llama:SmolLM2-135M-Ins…", body[:3]
        assert body[2].startswith("provider ")
        assert "/srv/models" not in panel.text
