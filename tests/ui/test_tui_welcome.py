"""The first screen says where you are (issue 29 item 7, U1): an empty session's transcript
names the model, the workspace, the mode, the sandbox, how to set up a provider and three
keys; the first message takes its place, /new brings it back, a resumed session never
shows it."""

from __future__ import annotations

import asyncio

from textual.geometry import Region
from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.widgets.welcome import Welcome, WelcomeFacts, welcome_content

SIZE = (80, 24)


def welcome_text(app) -> str:
    return "\n".join(str(w.content) for w in app.transcript.query(Welcome))


def facts(**changes) -> WelcomeFacts:
    base = {
        "model": "demo:demo-model",
        "workspace": "~/ws",
        "mode": "ask",
        "sandbox": "bwrap",
        "provider_hint": "Demo model: set OPENAI_API_KEY.",
        "send_key": "enter",
        "stop_key": "esc",
        "help_key": "f1",
    }
    return WelcomeFacts(**{**base, **changes})


async def test_the_demo_welcome_says_where_you_are_at_80_columns(make_app):
    """U1: at 80x24 every line is whole on screen: model, folder, mode, setup, keys."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: app.transcript.query(Welcome), what="the welcome")
        text = welcome_text(app)
        assert "hermes-tui on demo:demo-model" in text
        assert "in ~/workspace" in text
        assert "mode ask (edits and commands ask first)  sandbox off" in text
        assert "Demo model: set OPENAI_API_KEY or ANTHROPIC_API_KEY" in text
        assert "~/hermes-home/config.yaml" in text
        assert "enter send a task  esc stop it  f1 every key and command" in text
        welcome = app.transcript.query_one(Welcome)
        assert welcome.region.right <= app.transcript.content_region.right
        assert welcome.region.bottom <= app.transcript.content_region.bottom
        shown = " ".join(
            strip.text.strip() for strip in welcome.render_lines(Region(0, 0, *welcome.outer_size))
        )
        for words in ("demo:demo-model", "~/hermes-home/config.yaml", "every key and command"):
            assert words in shown  # whole at 80 columns, wrapped where needed, never cut


async def test_the_welcome_goes_with_the_first_message_and_comes_back_with_new(
    make_app, scripted_in_process
):
    """U1: gone with the first message, back for /new, never over a resumed history."""
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: app.transcript.query(Welcome), what="the welcome")
        assert "Providers and models are set in ~/hermes-home/config.yaml" in welcome_text(app)
        await run_turn(pilot, "first")
        assert not app.transcript.query(Welcome)
        first = app.agent.session_id
        await app.submit("/new")
        await wait_until(pilot, lambda: app.transcript.query(Welcome), what="the welcome")
        await app.sessions.resume(first)
        await pilot.pause()
        assert not app.transcript.query(Welcome)
        assert [type(w).__name__ for w in app.transcript.children][:1] == ["UserMessage"]


async def test_an_app_started_on_a_session_never_shows_the_welcome(
    make_app, scripted_in_process, monkeypatch
):
    """U1: `--resume` / `-c` opens the history; the welcome is never made, not even at first."""
    from hermes_tui.widgets import welcome

    server = scripted_in_process({"replies": [reply("one")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "first")
        stored = app.agent.session_id
    made = []

    class Counted(Welcome):
        def __init__(self, facts: WelcomeFacts) -> None:
            made.append(facts)
            super().__init__(facts)

    monkeypatch.setattr(welcome, "Welcome", Counted)  # the transcript imports it when shown
    resumed = make_app(server)
    resumed.resume_ref = stored
    async with resumed.run_test(size=SIZE) as pilot:
        await resumed.ready()
        await wait_until(
            pilot, lambda: resumed.transcript.query("UserMessage"), what="the resumed history"
        )
        assert made == []


def test_a_hostile_folder_or_model_name_is_shown_not_obeyed():
    """H1: names from outside are shown with their hidden characters visible."""
    content = welcome_content(facts(workspace="~/evil\x1b]0;owned\x07", model="x:\x1b[2J"))
    plain = content.plain
    assert "\x1b" not in plain and "\x07" not in plain
    assert "in ~/evil␛]0;owned␇" in plain
    assert all(len(line) <= 76 for line in plain.splitlines() if "Demo" not in line)


async def test_a_message_sent_before_the_welcome_arrives_keeps_it_away(
    make_app, scripted_in_process
):
    """U1: a quick typist sends before start-up reaches the welcome: it never shows above
    the message, even when it comes while the message is still being mounted."""
    server = scripted_in_process({"replies": [reply("one")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.transcript.clear()
        sending = asyncio.ensure_future(app.transcript.add_user("typed quickly"))
        await asyncio.sleep(0)  # the message is on its way, not mounted yet
        await app.transcript.show_welcome(facts())
        await sending
        await pilot.pause()
        assert not app.transcript.query(Welcome)


async def test_the_welcome_names_the_mode_in_use_after_a_switch(make_app):
    """U1, N1: shift+Tab on the first screen: the welcome says the new mode, as the panel
    does (it once kept saying the mode the app started in)."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await wait_until(pilot, lambda: app.transcript.query(Welcome), what="the welcome")
        await type_keys(pilot, "shift+tab")
        await wait_until(
            pilot, lambda: "mode auto-edit (" in welcome_text(app), what="the new mode named"
        )
        await app.submit("/new")
        await wait_until(
            pilot, lambda: "mode auto-edit (" in welcome_text(app), what="kept after /new"
        )
