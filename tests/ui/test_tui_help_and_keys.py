"""Small things a user meets (issue 29 item 10, U2, U3): PageDown / PageUp scroll /help, its
`/mcp` row keeps its help apart, Tab after `/model bad:` offers nothing, and ctrl+p (the
command palette) is in the key bar."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette
from textual.containers import VerticalScroll
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.screens.help import HelpScreen
from hermes_tui.widgets.key_bar import KeyBar


async def open_help(pilot, app) -> VerticalScroll:
    await app.ready()
    await app.submit("/help")
    await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="/help")
    await pilot.pause()
    return app.screen.query_one("#help-body", VerticalScroll)


async def test_page_keys_scroll_the_help(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        body = await open_help(pilot, app)
        assert body.max_scroll_y > 0, "at 80x24 the help is longer than its box"
        await type_keys(pilot, "pagedown")
        await wait_until(pilot, lambda: body.scroll_y > 0, what="a page down")
        await type_keys(pilot, "pageup")
        await wait_until(pilot, lambda: body.scroll_y == 0, what="a page up")


async def test_a_long_usage_in_help_does_not_run_into_its_help(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_help(pilot, app)
        lines = str(app.screen.query_one("#help-commands").content).splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("/mcp "))
        assert lines[at].rstrip() == "/mcp [restart|disable|allow|stderr <server>]"
        column = len(lines[at + 1]) - len(lines[at + 1].lstrip())
        assert lines[at + 1].strip() == "MCP servers: the panel, or act on one"
        steer = next(line for line in lines if line.startswith("/steer "))
        assert steer.index("Guide") == column, "the help stays in its column"


async def test_at_80_columns_a_long_help_wraps_within_its_column(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_help(pilot, app)
        screen = app.screen
        commands = screen.query_one("#help-commands")
        column = " " * screen.usage_width

        def lines() -> list[str]:
            return str(commands.content).splitlines()

        await wait_until(pilot, lambda: len(lines()) > len(screen.commands), what="wrapped")
        stray = [line for line in lines() if not line.startswith(("/", column))]
        assert not stray, lines()
        width = commands.content_region.width
        assert all(len(line) <= width for line in lines()), "no line wraps on the screen"


async def test_tab_after_an_unknown_provider_offers_nothing(make_app, scripted_in_process):
    app = make_app(scripted_in_process({"replies": [reply("hi")]}))
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        # What a server listed: an id that holds `bad:` (Ollama tags have colons); the
        # servers are not asked again, so the list stays as the test set it.
        app.completion.models.lister = None
        app.completion.models.listed["other"] = ("llama3:bad:q4",)
        await type_keys(pilot, *"/model bad:")
        await type_keys(pilot, "tab")
        await type_keys(pilot, "tab")
        assert app.composer.text == "/model bad:"
        assert not app.query_one("#hints").display
        app.composer.load_text("")
        await type_keys(pilot, *"/model other:l", "tab")
        assert app.composer.text == "/model other:llama3:bad:q4 ", "a known provider still does"


@pytest.mark.parametrize("width", [80, 120])
async def test_ctrl_p_is_in_the_key_bar_and_opens_the_palette(make_app, width):
    app = make_app()
    async with app.run_test(size=(width, 24)) as pilot:
        await app.ready()
        await pilot.pause()
        assert "^p palette" in app.query_one(KeyBar).render().plain
        await type_keys(pilot, "ctrl+p")
        await wait_until(pilot, lambda: CommandPalette.is_open(app), what="the palette")
