"""A blockquote in an answer does not look like a user message (issue 17 item 10)."""

from __future__ import annotations

from textual.widgets._markdown import MarkdownBlockQuote
from ui.tui_helpers import reply, run_turn

from hermes_tui.widgets.messages import UserMessage


async def test_a_blockquote_has_its_own_rule_not_the_user_bar(make_app, scripted_in_process):
    server = scripted_in_process(
        {"replies": [reply("The docs say:\n\n> never edit main\n\nSo I won't.")]}
    )
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await run_turn(pilot, "what do the docs say?")
        quote = app.transcript.query_one(MarkdownBlockQuote).styles
        user = app.transcript.query_one(UserMessage).styles
        assert quote.border_left[0] != user.border_left[0], (quote.border_left, user.border_left)
        assert quote.border_left[1] != user.border_left[1]
        assert quote.background != user.background
