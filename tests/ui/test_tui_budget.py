"""Spend caps in the TUI ($2): a call over a cap is not sent, the turn says so, the message
comes back and the queue stays queued; /budget shows and raises a cap; the status panel
shows the spend against the session cap; a large request asks with the dialog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from ui.tui_helpers import TEST_ARM_SECONDS, answer_approval, quick_probes, run_turn
from waits import wait_until

from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import AnswerBlock, ErrorBlock, NoticeLine

# 10,000 tokens: $1.00; a cache read is a tenth of the input price.
PRICING = {"test-model": {"input": 100.0, "output": 100.0, "cache_read": 10.0}}
DOLLAR = {"input_tokens": 10_000, "output_tokens": 0}


def budget_app(make_app: Any, server: Any, home: Path, workspace: Path, **budget: Any) -> HermesApp:
    """The app on `server` with prices and `budget:` in its config."""
    make_app(server)  # writes the scripted config; the prices and caps go on top
    path = home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["providers"]["scripted"]["pricing"] = PRICING
    data["budget"] = budget
    path.write_text(yaml.safe_dump(data))
    probes = quick_probes(approval_arm_seconds=TEST_ARM_SECONDS)
    return HermesApp(load_config(), workspace=workspace, probes=probes)


def notices(app: HermesApp) -> list[str]:
    return [w.text for w in app.transcript.query(NoticeLine)]


def errors(app: HermesApp) -> list[str]:
    return [w.message for w in app.transcript.query(ErrorBlock)]


async def test_the_session_cap_stops_the_call_and_budget_raises_it(
    make_app, scripted_in_process, hermes_home, workspace
):
    """$2: the second call would pass the session cap: not sent, said, the text kept;
    `/budget session 5` raises it and the same message then goes through."""
    answers = [{"text": "first answer", "usage": DOLLAR}, {"text": "second answer"}]
    server = scripted_in_process({"replies": answers})
    app = budget_app(make_app, server, hermes_home, workspace, session=1.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        assert "cost $1.0000 / $1.05" in app.status_panel.text
        warning = "Spent $1.00 of the session cap of $1.05 (95 %); a call that would pass it"
        assert [n for n in notices(app) if n.startswith(warning)]  # the 80 % warning
        await run_turn(pilot, "second")
        assert len(server.requests) == 1
        (stop,) = errors(app)
        assert stop.startswith("Stopped: this call (~$1.0")
        assert "session cap of $1.05 (spent $1.00)" in stop
        assert app.composer.text == "second"  # nothing typed is lost
        shown = [w.text for w in app.transcript.query(Marker)]
        assert shown[-1] == "◈ not sent (spend cap): the message above is kept, not sent again"
        app.composer.load_text("")
        await app.submit("/budget")
        await wait_until(pilot, lambda: any("Spend caps" in n for n in notices(app)), what="caps")
        listing = next(n for n in notices(app) if "Spend caps" in n)
        assert "  session  $1.00 of $1.05\n" in listing
        await app.submit("/budget session 5")
        await wait_until(pilot, lambda: "cost $1.0000 / $5.00" in app.status_panel.text)
        assert "The session cap is $5.00 for this session." in notices(app)
        await run_turn(pilot, "second")
        assert len(server.requests) == 2
        assert [a.source for a in app.transcript.query(AnswerBlock)][-1] == "second answer"


async def test_the_day_cap_counts_what_other_sessions_spent_today(
    make_app, scripted_in_process, hermes_home, workspace
):
    """$2: $3.00 spent today by another session leaves no room under a $3.00 day cap."""
    import sqlite3

    server = scripted_in_process({"replies": [{"text": "never"}]})
    app = budget_app(make_app, server, hermes_home, workspace, day=3.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        conn = sqlite3.connect(hermes_home / "state.db")
        with conn:
            conn.execute(
                "INSERT INTO usage_by_day (day, session_id, estimated_cost_usd)"
                " VALUES (date('now', 'localtime'), 'earlier', 3.0)"
            )
        conn.close()
        await run_turn(pilot, "hello")
        assert server.requests == []
        assert "would pass the day cap of $3.00 (spent $3.00)" in errors(app)[0]


async def test_queued_messages_stay_queued_after_a_cap_stops_the_turn(
    make_app, scripted_in_process, hermes_home, workspace
):
    """$2: a message queued behind the stopped turn waits (the queue pauses), not sent."""
    tool = {"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}], "usage": DOLLAR}
    server = scripted_in_process({"replies": [{**tool, "gate": "hold"}, {"text": "never"}]})
    app = budget_app(make_app, server, hermes_home, workspace, turn=1.5)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.submit("list them")
        await wait_until(pilot, lambda: len(server.requests) == 1, what="the first call")
        await app.submit("and then this")  # busy: queued
        server.open_gate("hold")
        await wait_until(pilot, lambda: bool(errors(app)), what="the stop")
        await wait_until(pilot, lambda: app.input_queue.paused, what="the queue to pause")
        assert [item.text for item in app.input_queue.items] == ["and then this"]
        assert len(server.requests) == 1
        assert "turn cap of $1.50 (spent $1.00)" in errors(app)[0]


async def test_bad_budget_arguments_get_one_sentence(
    make_app, scripted_in_process, hermes_home, workspace
):
    """$2: `/budget week 5` or `/budget session lots` is refused with the usage."""
    server = scripted_in_process({"replies": []})
    app = budget_app(make_app, server, hermes_home, workspace, session=1.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("/budget session lots")
        await wait_until(pilot, lambda: bool(notices(app)), what="the refusal")
        assert notices(app)[-1] == (
            "Not a cap and an amount: 'session lots'. Use /budget, or /budget "
            "turn|session|day USD (e.g. /budget session 5)."
        )
        assert app.agent.usage_recorder.budget.cap("session") == 1.0


async def test_a_large_request_asks_in_the_dialog(
    make_app, scripted_in_process, hermes_home, workspace
):
    """$2: over `budget.ask_above_tokens` the dialog asks with the size and cost; n keeps
    the call unsent, y sends it."""
    server = scripted_in_process({"replies": [{"text": "read it"}]})
    app = budget_app(make_app, server, hermes_home, workspace, ask_above_tokens=1_000)
    big = "summarise " + "log line\n" * 1_000
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit(big)
        dialog = await answer_approval(pilot, "n")
        await wait_until(pilot, lambda: bool(errors(app)), what="the refusal")
        assert errors(app)[0].startswith("Not sent: the request is ")
        assert server.requests == []
        app.composer.load_text("")
        await app.submit(big)
        shown = await answer_approval(pilot, "y", after=dialog)
        assert "Send a request of " in shown.request.summary
        await app.wait_for_turn(20)
        assert len(server.requests) == 1


def seed_usage(home: Path) -> None:
    """Two days of stored usage in two projects (fixed days: the app's clock is fixed)."""
    import sqlite3

    conn = sqlite3.connect(home / "state.db")
    with conn:
        conn.execute(
            "INSERT INTO sessions (id, title, model, provider, workspace)"
            " VALUES ('s1', 'a', 'test-model', 'scripted', 'alpha'),"
            " ('s2', 'b', 'test-model', 'scripted', 'beta')"
        )
        conn.execute(
            "INSERT INTO usage_by_day (day, session_id, model, provider, input_tokens,"
            " output_tokens, cache_read_tokens, api_call_count, estimated_cost_usd) VALUES"
            " ('2025-06-15', 's1', 'test-model', 'scripted', 30000, 2000, 12000, 4, 3.2),"
            " ('2025-06-14', 's2', 'test-model', 'scripted', 5000, 500, 0, 1, 0.55),"
            " ('2025-01-01', 's2', 'test-model', 'scripted', 9, 9, 0, 1, 9.0),"
            # After the app's today: not in its last 30 days either.
            " ('2025-06-20', 's2', 'test-model', 'scripted', 9, 9, 0, 1, 9.0)"
        )
    conn.close()


def test_the_usage_screen(snap_compare, make_app, scripted_in_process, hermes_home, workspace):
    """$2: /usage lists the last 30 days by day, project and model, with the cache's
    saving (12,000 read tokens at $100 less $10 a million: $1.08) and a total."""
    from hermes_tui.screens.usage import UsageScreen

    server = scripted_in_process({"replies": []})
    app = budget_app(make_app, server, hermes_home, workspace, session=5.0)
    app.probes.now = lambda: 1_750_000_000.0  # 2025-06-15: the fixture's clock

    async def open_usage(pilot: Any) -> None:
        await app.ready()
        seed_usage(hermes_home)
        await app.submit("/usage")
        await wait_until(pilot, lambda: isinstance(app.screen, UsageScreen), what="/usage")
        screen = app.screen
        assert screen.session_line == "This session: $0.00 of its $5.00 cap"
        assert [line.saved_usd for line in screen.lines] == [pytest.approx(1.08), 0.0]
        assert [line.day for line in screen.lines] == ["2025-06-15", "2025-06-14"]
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 30), run_before=open_usage)
