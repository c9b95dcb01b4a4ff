"""The empty transcript says where the agent works and how to drive it; the first message
takes its place, /new brings it back, a resumed session's history never shows it (U1)."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn

from hermes_tui.widgets.welcome import Welcome, WelcomeFacts, welcome_content

SIZE = (120, 36)


def _welcome_text(app) -> str:
    return " ".join(str(w.content) for w in app.transcript.query(Welcome))


async def test_the_welcome_comes_and_goes_with_an_empty_session(make_app, scripted):
    server = scripted({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await pilot.pause()
        text = _welcome_text(app)
        assert "hermes-tui works in workspace, asking before every edit and command." in text
        assert "^s steers the turn, esc stops it" in text and "f1 help" in text
        await run_turn(pilot, "first")
        assert not app.transcript.query(Welcome)
        first = app.agent.session_id
        await app.submit("/new")
        await pilot.pause()
        assert app.transcript.query(Welcome)
        await app.sessions.resume(first)
        await pilot.pause()
        assert not app.transcript.query(Welcome)
        assert [w.__class__.__name__ for w in app.transcript.children][:1] == ["UserMessage"]


def test_a_hostile_folder_name_is_shown_not_obeyed():
    facts = WelcomeFacts("evil\x1b]0;owned\x07", "auto-edit", "esc", "^s", "f1")
    plain = welcome_content(facts).plain
    assert "\x1b" not in plain and "\x07" not in plain
    assert "works in evil␛]0;owned␇, editing without asking." in plain
    assert all(len(line) <= 76 for line in plain.splitlines())


async def test_a_message_sent_before_the_welcome_arrives_keeps_it_away(make_app, scripted):
    """A quick typist sends before start-up reaches the welcome: it never shows above the
    message, even when it comes while the message is still being mounted."""
    import asyncio

    server = scripted({"replies": [reply("one")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.transcript.clear()
        facts = WelcomeFacts("ws", "ask", "esc", "^s", "f1")
        sending = asyncio.ensure_future(app.transcript.add_user("typed quickly"))
        await asyncio.sleep(0)  # the message is on its way, not mounted yet
        await app.transcript.show_welcome(facts)
        await sending
        await pilot.pause()
        assert not app.transcript.query(Welcome)
