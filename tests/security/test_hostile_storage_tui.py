"""Storage trouble in the TUI (H7): a notice, the typed text kept, queued writes retried.

Pilot tests over real HTTP and SQLite: another connection holds the database's write lock
(tests/helpers.held_write_lock), or the database or its search index is damaged. The lock
window and the exit wait are made small in the app's config, so nothing waits seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3
from contextlib import ExitStack

from helpers import held_write_lock
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from agent.config import StorageSettings
from hermes_tui.widgets.messages import AnswerBlock, ErrorBlock, NoticeLine

LOCK_WINDOW = 0.1
LOCKED = "is locked by another process (another hermes-tui?)"
SAVING_WAITS = "Saving is waiting: the session database"


def with_storage(app, exit_wait: float = 20.0):
    """The app with a small lock window and the given exit wait."""
    storage = StorageSettings(lock_timeout_seconds=LOCK_WINDOW, exit_wait_seconds=exit_wait)
    app.config = dataclasses.replace(app.config, storage=storage)
    return app


def notices(app) -> list[str]:
    return [row.text for row in app.transcript.query(NoticeLine)]


def errors(app) -> list[str]:
    return [row.message for row in app.transcript.query(ErrorBlock)]


def stored(app) -> list[tuple[str, str]]:
    conn = sqlite3.connect(app.config.db_path)
    try:
        return conn.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()


async def send(pilot, text: str) -> None:
    await type_keys(pilot, *text, "enter")


def tool_turn() -> list[dict]:
    """A reply that waits at gate `locked`, then reads README.md; then the answer."""
    calls = [{"id": "r1", "name": "read_file", "arguments": {"path": "README.md"}}]
    return [
        reply("Let me read it.", tool_calls=calls, gate="locked"),
        reply("It is a sample project."),
    ]


async def test_a_lock_when_the_session_is_created_keeps_the_text_in_the_composer(
    make_app, scripted
):
    server = scripted({"replies": [reply("never asked")]})
    app = with_storage(make_app(server))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        with held_write_lock(app.db.path):
            await send(pilot, "please fix the bug")
            await app.wait_for_turn()
            await pilot.pause()
        assert app.composer.text == "please fix the bug"
        assert len(errors(app)) == 1 and LOCKED in errors(app)[0], errors(app)
        assert str(app.db.path) in errors(app)[0]
        assert "Internal error" not in errors(app)[0]
        assert "Your message is back in the input." in notices(app)
        assert server.requests_for() == []
    assert stored(app) == []


async def test_a_refused_text_never_overwrites_the_draft_typed_after_it(make_app, scripted):
    """H7, Z1: the store refuses the message while a newer draft is in the composer: the
    draft stays exactly as typed, and the message waits at the head of the queue, paused."""
    server = scripted({"replies": [reply("never asked")]})
    app = with_storage(make_app(server))
    release = asyncio.Event()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        app.probes.send_hold = release.wait
        with held_write_lock(app.db.path):
            await send(pilot, "please fix the bug")
            await wait_until(pilot, lambda: app.busy and not app.composer.text, what="the send")
            await type_keys(pilot, *"newer")
            await wait_until(pilot, lambda: app.composer.text == "newer", what="the draft")
            release.set()
            await app.wait_for_turn()
            await pilot.pause()
        assert app.composer.text == "newer"
        assert [item.text for item in app.input_queue.items] == ["please fix the bug"]
        assert app.input_queue.paused
        assert any("Your draft is kept" in n for n in notices(app)), notices(app)
        assert server.requests_for() == []


async def test_a_refused_text_comes_back_with_its_control_characters_shown(make_app, scripted):
    """A pasted escape sequence the store never took: back in the input as symbols (H1)."""
    server = scripted({"replies": [reply("never asked")]})
    app = with_storage(make_app(server))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        with held_write_lock(app.db.path):
            app.composer.load_text("fix \x1b[2J it")
            await pilot.press("enter")
            await app.wait_for_turn()
            await pilot.pause()
        assert app.composer.text == "fix \u241b[2J it"
        assert any("control characters shown as symbols" in n for n in notices(app))


async def test_a_queued_text_the_lock_refused_goes_back_to_the_head_of_the_queue(
    make_app, scripted
):
    server = scripted({"replies": [reply("never asked")]})
    app = with_storage(make_app(server))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        with held_write_lock(app.db.path):
            await app.submit("/queue run the tests")
            await app.wait_for_turn()
            await pilot.pause()
        assert [item.text for item in app.input_queue.items] == ["run the tests"]
        assert app.input_queue.paused, "it waits for the user, not for the next lock window"
        assert "Your message is back in the queue." in notices(app)
        assert app.composer.text == ""
        assert server.requests_for() == []


async def test_a_lock_held_mid_turn_past_the_window_keeps_the_turn_and_loses_nothing(
    make_app, scripted
):
    server = scripted({"replies": tool_turn()})
    app = with_storage(make_app(server))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await send(pilot, "what is in the readme")
        # The user message is on disk before the model is asked (S8); then the lock.
        await wait_until(pilot, lambda: server.requests_for(), what="the first model call")
        with held_write_lock(app.db.path) as release:
            server.open_gate("locked")
            await app.wait_for_turn()
            await pilot.pause()
            # The turn ran on to its end behind the lock, its text on screen.
            answers = [block.source for block in app.transcript.query(AnswerBlock)]
            assert answers[-1].strip() == "It is a sample project.", answers
            assert [n for n in notices(app) if n.startswith(SAVING_WAITS)], notices(app)
            assert not [n for n in notices(app) if "not being saved" in n]
            assert app.db.waiting_for_lock
            assert stored(app) == [("user", "what is in the readme")]
            release.set()
        await wait_until(pilot, lambda: app.db.idle, what="the queued writes landing")
        rows = stored(app)
        assert [role for role, _ in rows] == ["user", "assistant", "tool", "assistant"]
        assert rows[1][1] == "Let me read it." and "sample project" in rows[2][1]
        assert rows[3][1] == "It is a sample project."


def wait_notice(app) -> str:
    found = [n for n in notices(app) if n.startswith("Waiting up to ")]
    return found[0] if found else ""


async def locked_after_a_tool_turn(pilot, server, stack: ExitStack) -> None:
    """Run a tool turn whose writes a lock holds up; the lock stays held until `stack`
    closes, after the app has gone (its close must meet the lock too)."""
    app = pilot.app
    await app.ready()
    await send(pilot, "what is in the readme")
    await wait_until(pilot, lambda: server.requests_for(), what="the first model call")
    stack.enter_context(held_write_lock(app.db.path))
    server.open_gate("locked")
    await app.wait_for_turn()


async def test_quit_waits_bounded_saying_what_for_then_says_what_was_not_saved(make_app, scripted):
    server = scripted({"replies": tool_turn()})
    app = with_storage(make_app(server), exit_wait=1.0)
    with ExitStack() as stack:
        async with app.run_test(size=(120, 40)) as pilot:
            await locked_after_a_tool_turn(pilot, server, stack)
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: wait_notice(app), what="the exit wait's notice")
            notice = wait_notice(app)
            assert re.fullmatch(
                rf"Waiting up to 1 s for the database lock on {re.escape(str(app.db.path))} to "
                r"clear to save 3 messages.*: \^q again quits now\.",
                notice,
            ), notice
            await wait_until(pilot, lambda: app.return_code is not None, timeout=5, what="exit")
    assert len(app.exit_notes) == 1, app.exit_notes
    assert app.exit_notes[0].startswith("Not saved: 3 messages")
    assert "still locked by another process" in app.exit_notes[0]


async def test_quit_again_leaves_at_once(make_app, scripted):
    server = scripted({"replies": tool_turn()})
    app = with_storage(make_app(server), exit_wait=60.0)
    with ExitStack() as stack:
        async with app.run_test(size=(120, 40)) as pilot:
            await locked_after_a_tool_turn(pilot, server, stack)
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: wait_notice(app), what="the exit wait's notice")
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: app.return_code is not None, timeout=5, what="exit")
    assert len(app.exit_notes) == 1 and app.exit_notes[0].startswith("Not saved: 3 messages")


async def test_quit_saves_everything_once_the_lock_clears_within_the_wait(make_app, scripted):
    server = scripted({"replies": tool_turn()})
    app = with_storage(make_app(server), exit_wait=30.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await send(pilot, "what is in the readme")
        await wait_until(pilot, lambda: server.requests_for(), what="the first model call")
        with held_write_lock(app.db.path) as release:
            server.open_gate("locked")
            await app.wait_for_turn()
            await pilot.press("ctrl+q")
            await wait_until(pilot, lambda: wait_notice(app), what="the exit wait's notice")
            release.set()
            await wait_until(pilot, lambda: app.return_code is not None, timeout=10, what="exit")
    assert app.exit_notes == []
    assert [role for role, _ in stored(app)] == ["user", "assistant", "tool", "assistant"]


async def test_a_damaged_search_index_fails_search_with_its_sentence_and_the_rest_works(
    make_app, scripted
):
    server = scripted({"replies": [reply("zebras live in Africa."), reply("Lions do too.")]})
    app = with_storage(make_app(server))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await send(pilot, "where do zebras live")
        await app.wait_for_turn()
        conn = sqlite3.connect(app.db.path)
        conn.execute("UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10")
        conn.commit()
        conn.close()
        await type_keys(pilot, "ctrl+g", *"zebra")
        panel = app.sessions_panel
        await wait_until(pilot, lambda: panel.results.option_count == 1, what="the search error")
        shown = str(panel.results.get_option_at_index(0).prompt)
        assert "search index of the session database" in shown and "reindex" in shown, shown
        # Everything else goes on: a turn runs and is saved.
        app.composer.focus()
        await send(pilot, "and lions")
        await app.wait_for_turn()
        await pilot.pause()
        assert not [n for n in notices(app) if "not being saved" in n]
    assert stored(app)[-2:] == [("user", "and lions"), ("assistant", "Lions do too.")]


async def test_a_corrupt_database_at_start_ends_the_app_with_its_sentence(make_app, scripted):
    server = scripted({"replies": [reply("never asked")]})
    app = make_app(server)
    app.config.db_path.write_bytes(b"garbage, not a database " * 400)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.return_code is not None, what="the app ending")
    assert app.return_code == 1
    assert len(app.exit_notes) == 1
    assert str(app.config.db_path) in app.exit_notes[0]
    assert "is corrupt or not a SQLite database; move it aside" in app.exit_notes[0]


def damage_table(db, table: str) -> None:
    """Overwrite the root page of `table` with garbage, as a bad disk would."""
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(db, "r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xa5" * page_size)


async def test_a_damaged_sessions_table_is_a_notice_and_the_app_keeps_running(make_app, scripted):
    server = scripted({"replies": [reply("First answer."), reply("never asked")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await send(pilot, "first task")
        await app.wait_for_turn()
    damage_table(app.config.db_path, "sessions")
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: notices(app), what="the notice")
        assert app.is_running
        assert "is corrupt or not a SQLite database; move it aside" in notices(app)[0]
        assert str(app.config.db_path) in notices(app)[0]
