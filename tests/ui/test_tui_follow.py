"""Replies to commands are visible (issue 17 item 3): the transcript follows new content
while the user is at the bottom, a command's reply shows where the user typed it, and a
"new below" line says when something arrived out of sight."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.messages import NoticeLine

LONG = "\n\n".join(f"Paragraph {n} of a long answer that fills the screen." for n in range(40))


def visible(app, widget) -> bool:
    """True when `widget` is inside the transcript's view."""
    transcript = app.transcript
    top, bottom = (
        transcript.scroll_y,
        transcript.scroll_y + transcript.scrollable_content_region.height,
    )
    region = widget.virtual_region
    return region.y >= top and region.bottom <= bottom


async def test_a_command_reply_below_a_long_answer_is_in_view(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply(LONG)]})
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "write a lot")
        transcript = app.transcript
        assert transcript.max_scroll_y > 0, "the answer is taller than the screen"
        assert transcript.following, "the end of a turn keeps following the bottom"
        await app.submit("/theme")
        await pilot.pause()
        notice = list(transcript.query(NoticeLine))[-1]
        assert notice.text.startswith("Theme:")
        await wait_until(pilot, lambda: visible(app, notice), what="the reply in view")
        await app.submit("/nosuchcommand")
        await pilot.pause()
        unknown = list(transcript.query(NoticeLine))[-1]
        await wait_until(pilot, lambda: visible(app, unknown), what="the unknown-command reply")


async def test_a_command_typed_while_scrolled_up_brings_the_reply_into_view(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply(LONG)]})
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "write a lot")
        await type_keys(pilot, "pageup", "pageup")
        await pilot.pause()
        assert not app.transcript.following
        await app.submit("/model")
        await pilot.pause()
        notice = list(app.transcript.query(NoticeLine))[-1]
        assert notice.text.startswith("Model:")
        await wait_until(pilot, lambda: visible(app, notice), what="the reply in view")
        assert app.transcript.following


async def test_new_content_out_of_sight_is_announced_and_a_click_follows_it(
    make_app, scripted_in_process
):
    server = scripted_in_process(
        {"replies": [reply(LONG), reply("The second answer. SECOND", gate="later", gate_after=1)]}
    )
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "write a lot")
        line = app.query_one("#new-below")
        assert not line.display
        await app.submit("and more")
        await type_keys(pilot, "pageup", "pageup")
        await pilot.pause()
        assert not app.transcript.following
        server.open_gate("later")
        await app.wait_for_turn()
        await wait_until(pilot, lambda: line.display, what="the new-below line")
        assert "new below" in str(line.content) and "^end" in str(line.content)
        await pilot.click("#new-below")
        await wait_until(pilot, lambda: not line.display, what="the line to go")
        assert app.transcript.following
        answer = list(app.transcript.children)[-1]
        await wait_until(pilot, lambda: visible(app, answer), what="the new answer in view")


async def test_scrolling_back_down_clears_the_line(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply(LONG), reply("Short.")]})
    app = make_app(server)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_turn(pilot, "write a lot")
        await type_keys(pilot, "pageup")
        await pilot.pause()
        await app.transcript.add_notice("something happened meanwhile")
        line = app.query_one("#new-below")
        await wait_until(pilot, lambda: line.display, what="the new-below line")
        await type_keys(pilot, "ctrl+end")
        await wait_until(pilot, lambda: not line.display, what="the line to go")
        assert app.transcript.following
