"""The sessions panel fits its terminal (issue 29 item 3, U1): every title on one line in
every state, a width that grows with the terminal and that the user can change (remembered in
the app's state file), and a search that lists each session once."""

from __future__ import annotations

import json

import pytest
from ui.tui_helpers import FIXED_NOW, type_keys
from waits import wait_until

from hermes_tui.layout import sessions_width
from hermes_tui.sessions import SESSIONS_PAGE
from hermes_tui.ui_state import STATE_FILE
from hermes_tui.widgets.sessions_panel import OLDER_ID

STORE_SIZE = 208
SIZES = [(80, 24), (120, 36), (200, 50)]


def long_title(number: int) -> str:
    return f"task number {number} about the flaky login test on the storage layer"


async def seed(app, count: int = STORE_SIZE) -> None:
    """`count` stored sessions, newest last, each with a long title and a finished turn."""
    await app.ready()
    for number in range(count):
        session = await app.db.create_session(
            model="gpt-4.1",
            provider="openai",
            workspace=str(app.workspace),
            title=long_title(number),
        )
        stamp = FIXED_NOW - (count - number) * 60
        await app.db.update_session(
            session["id"], created_at=stamp, updated_at=stamp, last_activity_at=stamp
        )
    await app.refresh_sessions()


def panel_lines(app) -> list[str]:
    """The sessions list as painted, one string per screen row."""
    option_list = app.sessions_panel.option_list
    return [option_list.render_line(y).text for y in range(option_list.size.height)]


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_every_row_is_two_lines_with_a_scrollbar_at_every_size(make_app, size):
    """A long title never wraps into a stray line flush left (the `about…` line), with the
    list's scrollbar showing (208 sessions), at 80, 120 and 200 columns."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await seed(app)
        app.show_panel("sessions")
        option_list = app.sessions_panel.option_list
        await wait_until(pilot, lambda: option_list.size.height > 0, what="the list laid out")
        await pilot.pause()
        assert option_list.show_vertical_scrollbar, "the case the issue saw: a scrollbar"
        assert option_list.scrollable_content_region.width == app.sessions_panel.row_width
        assert option_list.virtual_size.height == 2 * option_list.option_count
        lines = panel_lines(app)
        stray = [line for line in lines if line.strip() and not line.startswith("  ")]
        assert not stray, lines
        assert all("…" in line for line in lines[::2]), "each title is cut on its line"


async def test_the_panel_says_how_many_older_sessions_and_loads_them_at_its_end(make_app):
    """U1: with 208 stored sessions the panel lists the newest 200 and a last row says 8
    older ones are left out; the highlight reaching that row loads them (the list once
    stopped at 200 and said nothing)."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await seed(app)
        panel = app.sessions_panel
        option_list = panel.option_list
        assert len(panel.sessions) == SESSIONS_PAGE
        assert option_list.option_count == SESSIONS_PAGE + 1
        last = option_list.get_option_at_index(SESSIONS_PAGE)
        assert last.id == OLDER_ID
        assert "8 older sessions" in str(last.prompt)
        await app.action_focus_sessions()
        await type_keys(pilot, "end")
        await wait_until(
            pilot, lambda: len(panel.sessions) == STORE_SIZE, what="the older sessions loaded"
        )
        assert option_list.option_count == STORE_SIZE, "no 'older' row once all are listed"
        titles = [s["title"] for s in panel.sessions]
        assert titles[-1] == long_title(0), "the oldest session is listed last"
        assert option_list.highlighted == SESSIONS_PAGE, "on the first session it loaded"
        await type_keys(pilot, "enter")
        await wait_until(
            pilot, lambda: app.agent.session_id == panel.sessions[SESSIONS_PAGE]["id"],
            what="an older session resumed",
        )  # fmt: skip
        assert len(panel.sessions) == STORE_SIZE, "a refresh keeps what was loaded"


async def test_scrolling_to_the_end_loads_the_older_sessions(make_app):
    """U1: the wheel (scrolling, not the highlight) reaching the list's end loads them too."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await seed(app)
        panel = app.sessions_panel
        app.show_panel("sessions")
        await wait_until(pilot, lambda: panel.option_list.max_scroll_y > 0, what="laid out")
        panel.option_list.scroll_end(animate=False, immediate=True)
        await wait_until(
            pilot, lambda: len(panel.sessions) == STORE_SIZE, what="the older sessions loaded"
        )


@pytest.mark.parametrize(("width", "panel"), [(80, 28), (120, 28), (160, 32), (200, 40), (300, 44)])
async def test_the_panel_widens_with_the_terminal(make_app, width, panel):
    app = make_app()
    async with app.run_test(size=(width, 30)) as pilot:
        await app.ready()
        app.show_panel("sessions")
        await pilot.pause()
        assert app.sessions_panel.outer_size.width == panel


async def test_ctrl_arrows_resize_the_panel_and_the_width_is_remembered(make_app, hermes_home):
    """ctrl+right / ctrl+left in the panel widen and narrow it; the width is written to the
    app's state file (not config.yaml) and a new start uses it, within the terminal's bounds."""
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await seed(app, 3)
        await app.action_focus_sessions()
        await pilot.pause()
        await type_keys(pilot, "ctrl+right", "ctrl+right")
        await wait_until(pilot, lambda: app.sessions_panel.outer_size.width == 48, what="wider")
        await type_keys(pilot, "ctrl+left")
        await wait_until(pilot, lambda: app.sessions_panel.outer_size.width == 44, what="narrower")
        first = panel_lines(app)[0]
        assert long_title(2)[:30] in first, "a wider panel shows more of the title"
    assert json.loads((hermes_home / STATE_FILE).read_text()) == {"sessions_width": 44}
    assert "sessions_width" not in (hermes_home / "config.yaml").read_text()

    again = make_app()
    async with again.run_test(size=(200, 50)) as pilot:
        await again.ready()
        await pilot.pause()
        assert again.sessions_panel.outer_size.width == 44
        await pilot.resize_terminal(80, 24)
        again.show_panel("sessions")
        await pilot.pause()
        assert again.sessions_panel.outer_size.width == 28, "a quarter of 80 at most, or 28"


def test_the_chosen_width_stays_within_bounds():
    assert sessions_width(200, 10) == 20
    assert sessions_width(200, 90) == 50, "a quarter of the terminal at most"
    assert sessions_width(90, 60) == 28, "or the default's least"


async def test_a_broken_state_file_is_the_default_width(make_app, hermes_home):
    (hermes_home / STATE_FILE).write_text("{not json")
    app = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        await app.ready()
        await pilot.pause()
        assert app.sessions_panel.outer_size.width == 40


async def test_a_search_lists_each_session_once(make_app):
    """Three matching messages in one session: one hit, its best snippet (the panel once
    listed the session three times)."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        many = await app.db.create_session(model="m", provider="p", workspace="/w", title="many")
        one = await app.db.create_session(model="m", provider="p", workspace="/w", title="one")
        for text in ("zebra crossing notes and more words", "zebra zebra", "a zebra"):
            await app.db.add_message(many["id"], {"role": "user", "content": text})
        await app.db.add_message(one["id"], {"role": "user", "content": "one zebra here"})
        await app.sessions.open_search()
        await type_keys(pilot, *"zebra")
        panel = app.sessions_panel
        await wait_until(pilot, lambda: panel.hits, what="the hits")
        assert [hit["title"] for hit in panel.hits] == ["one", "many"]
        assert panel.hits[1]["snippet"] == "[zebra] [zebra]"
        assert panel.results.option_count == 2
        # The labels are cut for the width the hits list has (not one cell less: a cell
        # less cut every title and snippet line again with a second `…`).
        assert panel.results.scrollable_content_region.width == panel.row_width


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def test_sessions_panel_with_208_sessions(snap_compare, make_app, size):
    """The panel over a 208-session store, at each size (at 80 columns, opened with f2)."""
    app = make_app()

    async def seeded(pilot):
        await seed(app)
        await app.resume_session(app.sessions_panel.sessions[1]["id"])
        app.show_panel("sessions")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=seeded)
