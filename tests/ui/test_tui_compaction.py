"""Compaction, search and recovery in the TUI: pilot tests over real HTTP and SQLite (C, S, D4)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from ui.tui_helpers import FIXED_NOW, quick_probes, run_turn, type_keys
from waits import wait_until

from agent.config import load_config
from agent.recovery import RECOVERY_NOTE
from hermes_tui.app import HermesApp
from hermes_tui.widgets.markers import NEW_CACHE, Marker
from hermes_tui.widgets.messages import AnswerBlock, NoticeLine, UserMessage
from hermes_tui.widgets.notes import RecoveryNote, SummaryBlock

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}
SUMMARY = "The user asked questions 0 to 2 and got answers about the sample project."
FILL = "lorem ipsum " * 20


def summary_reply(**knobs: Any) -> dict[str, Any]:
    """The summary the model streams whenever it is asked for one."""
    return {"match": SUMMARY_RULE, "text": SUMMARY, "chunk_size": 12, **knobs}


def echo_script(*first: dict[str, Any]) -> dict[str, Any]:
    """`first` replies (summaries are matched), then every turn echoes the user."""
    return {"replies": [*first, {"echo": True}], "loop": True}


def compacting_app(server: Any, hermes_home: Path, workspace: Path, **compression: Any):
    """A HermesApp whose model window is large: compaction only runs on /compact."""
    provider = {"kind": "openai", "base_url": server.openai_base_url, "api_key": "test"}
    config = {
        "model": "scripted:test-model",
        "providers": {"scripted": {**provider, "context_window": 10_000_000}},
        "agent": {"retry_base_seconds": 0.01, "system_prompt": "You are a test agent."},
        "compression": {"protect_first": 1, "keep_recent": 4, **compression},
        "sandbox": "off",  # the same screen with or without bubblewrap
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return HermesApp(
        load_config(),
        workspace=workspace,
        probes=quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0),
    )


def users(app: HermesApp) -> list[str]:
    return [w.text for w in app.transcript.query(UserMessage)]


def markers(app: HermesApp) -> list[str]:
    return [w.text for w in app.transcript.query(Marker)]


def notices(app: HermesApp, level: str | None = None) -> list[str]:
    return [
        w.text
        for w in app.transcript.query(NoticeLine)
        if level is None or w.has_class(f"-{level}")
    ]


def summary_tokens(app: HermesApp) -> int:
    """N of `compacting... (N tokens of summary)` in the status panel, else -1."""
    found = re.search(r"compacting\.\.\. \((\d+) tokens of summary\)", app.status_panel.text)
    return int(found[1]) if found else -1


async def seed(pilot: Any, turns: int) -> None:
    for i in range(turns):
        await run_turn(pilot, f"question {i} {FILL}")


async def test_compact_marks_the_spot_reports_and_keeps_every_message(
    scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script(summary_reply()))
    app = compacting_app(server, hermes_home, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await seed(pilot, 4)
        session_id = app.agent.session_id
        await app.submit("/compact")
        await app.wait_for_turn()
        await pilot.pause()
        assert markers(app) == [f"◈ compacted 3 messages · {NEW_CACHE}"]
        status = app.status_panel.text
        assert "Compacted 3 messages into a summary" in status, status
        # Compaction changes what the model sees, not what the user has.
        assert users(app) == [f"question {i} {FILL}" for i in range(4)]
        assert app.agent.session_id == session_id
        # The next turn sends the summary, not the summarised messages.
        await run_turn(pilot, "go on")
        sent = json.dumps(server.requests[-1].body["messages"])
        assert SUMMARY in sent and "question 1" not in sent and "question 3" in sent
        assert "compacted" not in app.status_panel.text  # the outcome goes with the next turn
        # Rebuilt from the stored rows: the summarised rows, then the marker and a folded
        # summary where it happened, never shown as something the user typed.
        await app.resume_session(session_id)
        await pilot.pause()
        assert users(app) == [*(f"question {i} {FILL}" for i in range(4)), "go on"]
        assert markers(app) == [f"◈ compacted 3 messages · {NEW_CACHE}"]
        (summary,) = app.transcript.query(SummaryBlock)
        assert summary.text == SUMMARY and not summary.expanded
        rows = [type(w).__name__ for w in app.transcript.children]
        assert rows.index("Marker") == rows.index("SummaryBlock") - 1
        assert (
            rows.index("SummaryBlock")
            < [i for i, w in enumerate(app.transcript.children) if isinstance(w, UserMessage)][2]
        )


async def test_compaction_in_progress_shows_its_summary_tokens_and_queues_input(
    scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script(summary_reply(gate="s", gate_after=2)))
    app = compacting_app(server, hermes_home, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await seed(pilot, 4)
        await app.submit("/compact")
        await wait_until(pilot, lambda: summary_tokens(app) > 0, what="compaction progress")
        assert not markers(app)  # nothing committed yet
        assert app.busy
        await app.submit("after the compaction")  # queued behind it, not lost
        assert [item.text for item in app.input_queue.items] == ["after the compaction"]
        server.open_gate("s")
        await app.wait_for_turn()
        await pilot.pause()
        assert markers(app) == [f"◈ compacted 3 messages · {NEW_CACHE}"]
        assert users(app)[-1] == "after the compaction"
        answers = [w.source for w in app.transcript.query(AnswerBlock)]
        assert answers[-1] == "echo: after the compaction"


async def test_compact_during_a_turn_says_the_agent_is_busy(
    scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script({"text": "slow", "gate": "g", "gate_after": 1}))
    app = compacting_app(server, hermes_home, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("hello")
        await wait_until(pilot, lambda: app.agent.busy, what="the turn")
        await app.run_command("/compact")
        assert "A turn is running: /compact works when the agent is idle." in notices(app)
        server.open_gate("g")
        await app.wait_for_turn()
        await pilot.pause()


async def test_older_messages_stay_reachable_by_scrolling_after_compaction(
    scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script(summary_reply()))
    app = compacting_app(server, hermes_home, workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session = await app.db.create_session(
            model="test-model", provider="scripted", workspace=str(workspace), title="long"
        )
        for i in range(160):
            role = "user" if i % 2 == 0 else "assistant"
            await app.db.add_message(session["id"], {"role": role, "content": f"{role} {i}"})
        await app.resume_session(session["id"])
        await app.submit("/compact")
        await app.wait_for_turn()
        await pilot.pause()
        assert markers(app) == [f"◈ compacted 155 messages · {NEW_CACHE}"]
        # The marker and summary went in before the kept tail: every mounted row still names
        # the stored row it shows, so paging neither skips nor repeats a row.
        stored = {r["seq"]: r["content"] for r in await app.db.load_messages(session["id"])}
        transcript = app.transcript
        for widget in transcript.children:
            if isinstance(widget, UserMessage | AnswerBlock) and hasattr(widget, "row_seq"):
                shown = widget.text if isinstance(widget, UserMessage) else widget.source
                assert stored[widget.row_seq] == shown
        while "user 0" not in users(app):
            oldest = min(w.row_seq for w in transcript.children if hasattr(w, "row_seq"))
            transcript.scroll_home(animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda oldest=oldest: (
                    min(w.row_seq for w in transcript.children if hasattr(w, "row_seq")) < oldest
                ),
                what="an older page",
            )
        assert users(app)[:2] == ["user 0", "user 2"]


async def test_search_finds_a_message_in_another_session_and_resumes_it(
    make_app, scripted_in_process
):
    server = scripted_in_process(echo_script())
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "where does the zebra live")
        zebra_session = app.agent.session_id
        await app.run_command("/new")
        await run_turn(pilot, "something else entirely")
        assert app.agent.session_id != zebra_session
        await type_keys(pilot, "ctrl+g")
        panel = app.sessions_panel
        assert panel.search_input.has_focus
        await type_keys(pilot, *"zebra")
        # The question and its echo match: the session is listed once (issue 29).
        await wait_until(pilot, lambda: len(panel.hits) == 1, what="one hit")
        assert {hit["session_id"] for hit in panel.hits} == {zebra_session}
        label = str(panel.results.get_option_at_index(0).prompt)
        assert label.startswith("  where does the zebra") and "[zebra] live" in " ".join(
            label.split()
        )
        await type_keys(pilot, "down", "enter")
        await wait_until(pilot, lambda: app.agent.session_id == zebra_session, what="resume")
        assert users(app) == ["where does the zebra live"]
        # Escape closes the search: the sessions list is back.
        panel.results.focus()
        await type_keys(pilot, "escape")
        assert not panel.searching and panel.option_list.display
        assert not panel.results.display
        # Nothing the user types breaks the search.
        await type_keys(pilot, "ctrl+g", *'"(*', "enter")
        await wait_until(pilot, lambda: panel.results.option_count == 1, what="no matches")
        assert "no matches" in str(panel.results.get_option_at_index(0).prompt)


async def test_an_interrupted_session_offers_continue_and_shows_the_recovery_note(
    make_app, scripted_in_process
):
    server = scripted_in_process(echo_script())
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        session = await app.db.create_session(
            model="test-model", provider="scripted", workspace="/w", title="cut off"
        )
        await app.db.add_message(session["id"], {"role": "user", "content": "fix the test"})
        await app.resume_session(session["id"])
        assert any("/continue" in text for text in notices(app, "warning"))
        await app.run_command("/continue")
        await app.wait_for_turn()
        await pilot.pause()
        assert len(app.transcript.query(RecoveryNote)) == 1
        assert RECOVERY_NOTE not in users(app)
        # Rebuilt from the stored rows: the typed note, never shown as the user's text.
        await app.resume_session(session["id"])
        await pilot.pause()
        assert users(app) == ["fix the test"]
        assert len(app.transcript.query(RecoveryNote)) == 1
        assert not any("/continue" in text for text in notices(app))


async def test_a_write_failure_outside_a_turn_is_an_error_line_once(make_app):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        app.db.on_write_error("disk full")
        app.db.on_write_error("disk full")
        await wait_until(pilot, lambda: notices(app, "error"), what="the error line")
        assert notices(app, "error") == ["This session is not being saved: disk full"]


async def test_a_summary_merged_into_a_kept_answer_renders_as_a_summary_and_the_answer(
    scripted_in_process, hermes_home, workspace
):
    server = scripted_in_process(echo_script(summary_reply()))
    app = compacting_app(server, hermes_home, workspace, keep_recent=3)
    async with app.run_test(size=(120, 40)) as pilot:
        await seed(pilot, 4)
        await app.submit("/compact")
        await app.wait_for_turn()
        await app.resume_session(app.agent.session_id)
        await pilot.pause()
        (summary,) = app.transcript.query(SummaryBlock)
        assert summary.text == SUMMARY
        answers = [w.source for w in app.transcript.query(AnswerBlock)]
        assert answers == [f"echo: question {i} {FILL}" for i in range(4)]
