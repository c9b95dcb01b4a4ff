"""Long sessions (U5): a bounded window of mounted rows, older ones paged in from SQLite."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn
from waits import wait_until

from hermes_tui.widgets.messages import AnswerBlock, UserMessage
from hermes_tui.widgets.transcript import MAX_MOUNTED, PAGE_ROWS

ROWS = MAX_MOUNTED + 2 * PAGE_ROWS
"""Enough rows that the window is trimmed on two pages in each direction (more pages only
repeat the same paging, at about a second of layout each)."""


async def seed(app, rows: int) -> str:
    """A stored session of alternating questions and answers.

    The rows are queued and flushed: the writer applies them in one transaction (one
    add_message call per row is a transaction, an fsync, each).
    """
    session = await app.db.create_session(
        model="demo-model", provider="demo", workspace=str(app.workspace), title="long"
    )
    for i in range(rows):
        role = "user" if i % 2 == 0 else "assistant"
        app.db.enqueue_message(session["id"], {"role": role, "content": f"{role} {i}"})
    await app.db.flush()
    return session["id"]


def texts(app) -> list[str]:
    """The mounted rows' text, oldest first."""
    out = []
    for widget in app.transcript.children:
        if isinstance(widget, UserMessage):
            out.append(widget.text)
        elif isinstance(widget, AnswerBlock):
            out.append(widget.source)
    return out


def oldest_seq(app) -> int:
    return min(w.row_seq for w in app.transcript.children)


async def test_scrolling_up_pages_in_older_rows_and_the_window_stays_bounded(make_app):
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, ROWS)
        await app.resume_session(session_id)
        await pilot.pause()
        assert len(app.transcript.children) == PAGE_ROWS
        assert texts(app)[-1] == f"assistant {ROWS - 1}"
        transcript = app.transcript
        while oldest_seq(app) > 1:
            before = oldest_seq(app)
            transcript.scroll_home(animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda: oldest_seq(app) < before and not transcript.paging,
                what="an older page, paging done",
            )
            assert len(transcript.children) <= MAX_MOUNTED
        assert texts(app)[0] == "user 0"
        assert f"assistant {ROWS - 1}" not in texts(app)  # the bottom was let go
        # Scrolling back down pages the newest rows in again.
        while f"assistant {ROWS - 1}" not in texts(app):
            newest = max(w.row_seq for w in transcript.children)
            transcript.scroll_end(animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda: (
                    max(w.row_seq for w in transcript.children) > newest and not transcript.paging
                ),
                what="a newer page, paging done",
            )
            assert len(transcript.children) <= MAX_MOUNTED
        assert "user 0" not in texts(app)


async def test_a_new_turn_below_a_trimmed_window_reloads_the_newest_rows(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply("fresh answer")]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        session_id = await seed(app, ROWS)
        await app.resume_session(session_id)
        await pilot.pause()
        transcript = app.transcript
        while f"assistant {ROWS - 1}" in texts(app):
            before = oldest_seq(app)
            transcript.scroll_home(animate=False, immediate=True)
            await wait_until(
                pilot,
                lambda: oldest_seq(app) < before and not transcript.paging,
                what="an older page, paging done",
            )
        await run_turn(pilot, "and now?")
        assert texts(app)[-4:] == [
            f"user {ROWS - 2}",
            f"assistant {ROWS - 1}",
            "and now?",
            "fresh answer",
        ]
        # The finished turn is tagged with its stored user row, so it can be paged out and in.
        assert {w.row_seq for w in transcript.children[-2:]} == {ROWS + 1}
