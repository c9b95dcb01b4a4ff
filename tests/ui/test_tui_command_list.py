"""The command list (issue 29 item 4, U2): typing `/` shows every matching command on a row
of its own, with its origin and a one-line help, moved in with Up / Down and taken with Tab
or Enter, as the `@` picker is."""

from __future__ import annotations

import pytest
from ui.tui_helpers import reply, type_keys
from waits import wait_until

from hermes_tui.commands.registry import SlashCommand
from hermes_tui.screens.help import HelpScreen

SIZE = (80, 24)


class PromptSource:
    """A command source standing for an MCP server's prompts (origin `mcp`)."""

    def commands(self):
        async def run(ctx, argument):
            await ctx.notice(f"ran the prompt with {argument!r}")

        return [SlashCommand("mcp:docs:release", "[version]", "Draft release notes", run, "mcp")]


@pytest.fixture
def with_commands(workspace, hermes_home):
    """A project command `/review <file>` and a user command `/retro`."""
    project = workspace / ".hermes-tui" / "commands"
    project.mkdir(parents=True)
    (project / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully.\n"
    )
    user = hermes_home / "commands"
    user.mkdir(parents=True)
    (user / "retro.md").write_text("---\ndescription: A short retrospective\n---\nLook back.\n")


def hints(app) -> list[str]:
    """The lines above the composer, as painted (empty when hidden)."""
    popup = app.query_one("#hints")
    if not popup.display:
        return []
    return [popup.render_line(y).text.rstrip() for y in range(popup.size.height)]


async def listed(pilot, app, text: str) -> list[str]:
    await wait_until(pilot, lambda: any(text in line for line in hints(app)), what=text)
    return hints(app)


async def test_slash_lists_every_command_on_its_own_row(make_app, with_commands):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        app.command_table.add_source(PromptSource())
        await type_keys(pilot, "/")
        total = len(app.command_table.entries())
        lines = await listed(pilot, app, "/steer")
        assert f"1-8 of {total} commands" in lines[0], "the rest are a move away, and said"
        assert len(lines) == 9, "a title and eight rows, none wrapped"
        assert lines[1].startswith("▸ /steer <text>") and "built-in" in lines[1]
        for _ in range(total - 1):
            await type_keys(pilot, "down")
        last = await listed(pilot, app, f"{total - 7}-{total} of {total}")
        assert any(line.startswith("▸ /mcp:docs:release") for line in last), last
        assert any("MCP prompt" in line and "Draft release notes" in line for line in last)
        await type_keys(pilot, "down")  # round to the first again
        assert (await listed(pilot, app, "▸ /steer"))[0].startswith("/  1-8 of")


async def test_a_prefix_shows_every_match_with_its_origin_and_help(make_app, with_commands):
    """`/re` once showed three names on a wrapped line and hid the custom `/review`."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_keys(pilot, *"/re")
        lines = await listed(pilot, app, "/review")
        names = [line.split()[1] if line.startswith("▸") else line.split()[0] for line in lines[1:]]
        assert names == ["/redirect", "/resume", "/redo", "/rewind", "/review", "/retro"]
        assert "6 commands" in lines[0]
        review = next(line for line in lines if "/review" in line)
        assert "project" in review and "Review a file" in review
        retro = next(line for line in lines if "/retro" in line)
        assert "user" in retro and "A short retrospective" in retro


async def test_up_down_tab_and_enter_take_the_highlighted_command(make_app, scripted_in_process):
    app = make_app(scripted_in_process({"replies": [reply("hi")]}))
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        composer = app.composer
        await type_keys(pilot, *"/re")
        await listed(pilot, app, "▸ /redirect")
        await type_keys(pilot, "down", "down", "up")
        await listed(pilot, app, "▸ /resume")
        await type_keys(pilot, "tab")
        assert composer.text == "/resume "
        assert not any("/rewind" in line for line in hints(app)), "the list closed"

        composer.load_text("")
        await type_keys(pilot, *"/red")
        await listed(pilot, app, "▸ /redirect")
        await type_keys(pilot, "enter")  # it needs its text: put in, not sent
        await wait_until(pilot, lambda: composer.text == "/redirect ", what="/redirect put in")

        composer.load_text("")
        await type_keys(pilot, *"/hel")
        await listed(pilot, app, "▸ /help")
        await type_keys(pilot, "enter")  # no argument needed: it runs
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="/help ran")


async def test_escape_closes_the_list_and_typing_opens_it_again(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_keys(pilot, *"/re")
        await listed(pilot, app, "/rewind")
        await type_keys(pilot, "escape")
        await wait_until(pilot, lambda: not hints(app), what="the list closed")
        assert app.composer.text == "/re"
        await type_keys(pilot, "w")
        await listed(pilot, app, "▸ /rewind")


async def test_up_walks_the_history_past_a_recalled_command(make_app, scripted_in_process):
    """A `/help` sent before comes back with Up; the next Up goes on to the older entry
    instead of moving in the command list the recalled text opened."""
    app = make_app(scripted_in_process({"replies": [reply("one")]}))
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        composer = app.composer
        composer.remember("an older message")
        composer.remember("/help")
        await type_keys(pilot, "up")
        await wait_until(pilot, lambda: composer.text == "/help", what="/help recalled")
        await type_keys(pilot, "up")
        await wait_until(pilot, lambda: composer.text == "an older message", what="older")
