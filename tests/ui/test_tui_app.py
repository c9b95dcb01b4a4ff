"""Pilot tests of HermesApp driving the real Agent through the real SDKs and scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ui.tui_helpers import answer_approval, quick_probes, reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.screens.approval import ApprovalScreen
from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import AnswerBlock, NoticeLine, UserMessage
from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import ToolBlock


def kinds(app) -> list[str]:
    """The transcript's rows by widget type."""
    return [type(widget).__name__ for widget in app.transcript.children]


async def test_demo_turn_streams_reasoning_tool_and_answer(make_app):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "hello")
        assert kinds(app) == [
            "UserMessage",
            "ReasoningBlock",
            "AnswerBlock",
            "ToolBlock",
            "ReasoningBlock",
            "AnswerBlock",
        ]
        tool = app.transcript.query_one(ToolBlock)
        assert (tool.tool_name, tool.state) == ("list_dir", "ok")
        assert "README.md" in tool.output
        reasoning = list(app.transcript.query(ReasoningBlock))
        assert all(not block.live and not block.expanded for block in reasoning)
        answers = list(app.transcript.query(AnswerBlock))
        assert "What just happened" in answers[-1].source
        status = app.status_panel.status
        assert status.state == "idle" and status.model == "demo:demo-model"
        assert "OPENAI_API_KEY" in status.hint and "~/hermes-home/config.yaml" in status.hint
        assert [s["title"] for s in app.sessions_panel.sessions] == ["hello"]


async def test_tool_turn_approval_yes_writes_the_file(
    make_app, scripted_in_process, workspace: Path
):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "I'll write it.",
                    tool_calls=[
                        {
                            "id": "w1",
                            "name": "write_file",
                            "arguments": {"path": "notes.txt", "content": "hi\n"},
                        }
                    ],
                ),
                reply("Done."),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("write notes")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="modal")
        assert "notes.txt" in app.screen.request.detail + app.screen.request.summary
        await answer_approval(pilot, "y")
        await app.wait_for_turn()
        await pilot.pause()
        assert (workspace / "notes.txt").read_text() == "hi\n"
        assert app.transcript.query_one(ToolBlock).state == "ok"


async def test_tool_turn_approval_no_declines(make_app, scripted_in_process, workspace: Path):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    tool_calls=[
                        {
                            "id": "s1",
                            "name": "run_shell",
                            "arguments": {"command": "touch made.txt"},
                        }
                    ],
                ),
                reply("Understood, I won't."),
            ]
        }
    )
    app = make_app(server, approval="ask")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("touch a file")
        await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="modal")
        assert "touch made.txt" in app.screen.request.detail
        await answer_approval(pilot, "n")
        await app.wait_for_turn()
        await pilot.pause()
        assert not (workspace / "made.txt").exists()
        block = app.transcript.query_one(ToolBlock)
        assert block.state == "declined" and "declined" in block.output
        # The model was told, and answered.
        tool_result = server.requests[-1].body["messages"][-1]
        assert tool_result["role"] == "tool" and "declined" in tool_result["content"]


async def test_resume_shows_exactly_the_persisted_rows_and_no_reasoning(
    make_app, scripted_in_process
):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Looking.",
                    reasoning="secret chain of thought",
                    tool_calls=[{"id": "l1", "name": "list_dir", "arguments": {"path": "."}}],
                ),
                reply("Alpha answer.", reasoning="more private thinking"),
                reply("Beta answer.", reasoning="beta thinking"),
            ]
        }
    )
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "alpha question")
        alpha_id = app.agent.session_id
        assert app.transcript.query(ReasoningBlock)
        await app.submit("/new")
        await run_turn(pilot, "beta question")
        assert app.agent.session_id != alpha_id

        app.sessions_panel.option_list.focus()
        await pilot.pause()
        sessions = [s["id"] for s in app.sessions_panel.sessions]
        app.sessions_panel.option_list.highlighted = sessions.index(alpha_id)
        await type_keys(pilot, "enter")
        await wait_until(pilot, lambda: app.agent.session_id == alpha_id, what="resume")

        rows = await app.db.load_messages(alpha_id)
        assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
        assert kinds(app) == ["UserMessage", "AnswerBlock", "ToolBlock", "AnswerBlock"]
        assert not app.transcript.query(ReasoningBlock)
        assert app.transcript.query_one(UserMessage).text == "alpha question"
        answers = [a.source for a in app.transcript.query(AnswerBlock)]
        assert answers == ["Looking.", "Alpha answer."]
        tool = app.transcript.query_one(ToolBlock)
        assert tool.state == "ok" and tool.output == rows[2]["content"]
        shown = " ".join(w.text for w in app.transcript.query(UserMessage))
        assert "beta" not in shown
        assert app.sessions_panel.current_id == alpha_id


async def test_new_starts_a_fresh_session(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        first = app.agent.session_id
        await app.submit("/new")
        # An empty transcript again, but for the welcome; the next message takes its place.
        await wait_until(pilot, lambda: kinds(app) == ["Welcome"], what="the welcome again")
        assert app.agent.session_id is None
        await run_turn(pilot, "second")
        assert "Welcome" not in kinds(app)
        assert app.agent.session_id not in (None, first)
        assert [s["title"] for s in app.sessions_panel.sessions] == ["second", "first"]
        # The second session's request carried none of the first one's history.
        users = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
        assert [m["content"] for m in users] == ["second"]


async def test_model_switch_writes_and_shows_a_marker_that_is_never_sent(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await app.submit("/model other:second-model")
        await wait_until(pilot, lambda: app.transcript.query(Marker), what="marker")
        marker = app.transcript.query_one(Marker)
        assert marker.text.startswith("◈ model changed")
        assert app.status_panel.status.model == "other:second-model"
        await run_turn(pilot, "second")
        body = server.requests[-1].body
        assert body["model"] == "second-model"
        assert "display" not in json.dumps(body["messages"])
        assert [m["role"] for m in body["messages"] if m["role"] != "system"] == [
            "user",
            "assistant",
            "user",
        ]
        rows = await app.db.load_messages(app.agent.session_id)
        assert [r["display_kind"] for r in rows].count("model_switch") == 1


async def test_unknown_command_says_so_and_is_never_sent(make_app, scripted_in_process):
    """U2: an unknown command says so and is never sent to the model."""
    server = scripted_in_process({"replies": [reply("never")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await type_keys(pilot, *"/frobnicate", "enter")
        await wait_until(pilot, lambda: app.transcript.query(NoticeLine), what="notice")
        assert "Unknown command /frobnicate" in app.transcript.query_one(NoticeLine).text
        assert server.requests == []
        assert app.composer.text == ""


async def test_help_lists_every_command_and_key(make_app):
    """U2: /help lists the slash commands and the keys, from the same tables."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await type_keys(pilot, *"/help", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = str(app.screen.query_one("#help-commands").render())
        for name in ("/new", "/resume", "/sessions", "/model", "/title", "/help", "/quit"):
            assert name in text
        keys = str(app.screen.query_one("#help-keys").render())
        assert "new" in keys and "f2" in keys.lower()
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_title_renames_the_session(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("ok")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        await app.submit("/title My work")
        await wait_until(
            pilot,
            lambda: app.sessions_panel.sessions[0]["title"] == "My work",
            what="the new title in the sessions panel",
        )
        assert app.sessions_panel.sessions[0]["title"] == "My work"


async def test_panels_toggle_from_the_keyboard(make_app):
    """U1: the side panels toggle from the keyboard."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.sessions_panel.display and app.status_panel.display
        await type_keys(pilot, "f2")
        assert not app.sessions_panel.display
        await type_keys(pilot, "f3")
        assert not app.status_panel.display
        await type_keys(pilot, "f2", "f3")
        assert app.sessions_panel.display and app.status_panel.display
        assert app.composer.has_focus


async def test_layout_at_80x24_keeps_transcript_and_composer_usable(make_app, scripted_in_process):
    """U1: the layout works at 80x24."""
    server = scripted_in_process({"replies": [reply("A short answer.")]})
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "hi")
        # Both side panels fold away: the status is one line above the composer (issue 17).
        assert not app.sessions_panel.display and not app.status_panel.display
        assert app.status_line.display and "idle" in app.status_line.text
        transcript, composer = app.transcript.region, app.composer.region
        assert transcript.width >= 75 and transcript.height >= 12
        assert composer.bottom <= 23 and composer.height >= 1
        assert app.transcript.query_one(AnswerBlock).region.height >= 1
        await type_keys(pilot, "f2")
        assert app.sessions_panel.display


async def test_composer_newline_history_and_completion(make_app, scripted_in_process):
    """U2, U3: slash commands complete; the composer takes newlines and keeps history."""
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        composer = app.composer
        await type_keys(pilot, *"line one", "shift+enter", *"two")
        assert composer.text == "line one\ntwo"
        composer.load_text("")
        await type_keys(pilot, *"a\\", "enter", "b")
        assert composer.text == "a\nb"
        await type_keys(pilot, "enter")
        await app.wait_for_turn()
        assert composer.text == ""
        await type_keys(pilot, "up")
        assert composer.text == "a\nb"
        await type_keys(pilot, "down")
        assert composer.text == ""
        await type_keys(pilot, *"/res")
        hints = app.query_one("#hints")
        assert hints.display and "/resume" in str(hints.render())
        await type_keys(pilot, "tab")
        assert composer.text == "/resume "


async def test_large_paste_does_not_freeze(make_app):
    """A 20,000-line paste costs a few times what a 200-line one does (soft wrap is off for
    it), measured side by side in turns, so a loaded machine slows both; with the wrap on it
    costs a freeze's worth."""
    import time

    from textual import events

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:

        async def pasted_in(lines: int) -> float:
            app.composer.load_text("")
            await pilot.pause()
            text = "\n".join(f"line {i} " + "x" * 80 for i in range(lines))
            started = time.monotonic()
            app.post_message(events.Paste(text))
            await wait_until(pilot, lambda: len(app.composer.text) == len(text), timeout=60)
            return time.monotonic() - started

        small, big = [], []
        for _ in range(2):  # the big one last: the height below is the big paste's
            small.append(await pasted_in(200))
            big.append(await pasted_in(20_000))
        # Quiet, the big paste takes 6-8 times the small one (the round trip is most of it).
        assert min(big) < 25 * min(small), (big, small)
        assert app.composer.region.height <= 11


async def test_resume_at_startup_by_title(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("stored answer")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "remember this")
        session_id = app.agent.session_id
    again = make_app(server)
    again.resume_ref = "remember"
    async with again.run_test(size=(120, 40)) as pilot:
        await again.ready()
        await wait_until(pilot, lambda: kinds(again), what="the resumed session's rows")
        assert again.agent.session_id == session_id
        assert kinds(again) == ["UserMessage", "AnswerBlock"]


async def test_a_resumed_tool_block_keeps_its_outcome_and_duration(make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Reading two files.",
                    tool_calls=[
                        {"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}},
                        {"id": "r2", "name": "read_file", "arguments": {"path": "nope.txt"}},
                    ],
                ),
                reply("One was missing."),
            ]
        }
    )
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "read them")
        live = {block.call_id: block.state for block in app.transcript.query(ToolBlock)}
        assert live == {"r1": "ok", "r2": "error"}
        session_id = app.agent.session_id
        await app.submit("/new")
        await pilot.pause()
        await app.run_command(f"/resume {session_id}")
        await wait_until(pilot, lambda: len(app.transcript.query(ToolBlock)) == 2, what="resume")
        blocks = {block.call_id: block for block in app.transcript.query(ToolBlock)}
        assert {call_id: block.state for call_id, block in blocks.items()} == live
        assert all(block.duration is not None for block in blocks.values())
        # Providers never see the outcome: the stored row's content is the tool output only.
        rows = await app.db.load_messages(session_id)
        tool_rows = [row for row in rows if row["role"] == "tool"]
        assert [row["display_metadata"]["ok"] for row in tool_rows] == [True, False]
        assert all(row["display_kind"] is None for row in tool_rows)


async def test_configured_prices_give_the_cost_in_the_status_panel_and_the_session(
    make_app, scripted_in_process, hermes_home: Path
):
    import yaml

    from agent.config import load_config
    from hermes_tui.app import HermesApp

    server = scripted_in_process({"replies": [reply("priced answer")]})
    make_app(server)
    config = hermes_home / "config.yaml"
    data = yaml.safe_load(config.read_text())
    data["providers"]["scripted"]["pricing"] = {"test-model": {"input": 2.0, "output": 8.0}}
    config.write_text(yaml.safe_dump(data))
    app = HermesApp(
        load_config(),
        workspace=hermes_home,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "what does it cost")
        # 1,200 input tokens at $2/M and 80 output tokens at $8/M.
        assert "cost $0.0030" in app.status_panel.text
        session = await app.db.get_session(app.agent.session_id)
        assert session["estimated_cost_usd"] == pytest.approx(0.00304)


async def test_the_start_up_heap_is_frozen_while_running_and_released_on_exit(make_app):
    import gc

    app = make_app(collect_before_freeze=True)  # the user's start-up, collection and all
    async with app.run_test(size=(100, 30)):
        await app.ready()
        assert gc.get_freeze_count() > 0
        # The app's probes reach the demo it starts: make_app plays it at once.
        assert app.runtime.demo_server.script.defaults["delay"] == 0.0
    # Frozen objects are never collected: an app that exits must hand them back.
    assert gc.get_freeze_count() == 0
