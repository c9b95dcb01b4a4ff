"""Tab completion and the `@` picker in the composer (SPEC U2, P2, P3; issue 17 item 7)."""

from __future__ import annotations

import json

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

from hermes_tui.completion.models import ModelCatalog
from hermes_tui.widgets.messages import UserMessage

SIZE = (120, 36)


async def type_text(pilot, text: str) -> None:
    await type_keys(pilot, *text)


async def picker_shows(pilot, app, path: str) -> None:
    await wait_until(
        pilot,
        lambda: app.completion.picking and path in app.completion.paths,
        what=lambda: f"{path} in the picker (shows {app.completion.paths})",
    )


async def test_tab_with_nothing_to_complete_keeps_the_keys_in_the_composer(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_text(pilot, "hello")
        await type_keys(pilot, "tab")
        await type_text(pilot, " there")
        assert app.focused is app.composer
        assert app.composer.text == "hello there"


async def test_tab_completes_command_names_and_theme_arguments(make_app):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        composer = app.composer
        await type_text(pilot, "/th")
        await type_keys(pilot, "tab")
        assert composer.text == "/theme "
        await type_text(pilot, "hermes-g")
        await type_keys(pilot, "tab")
        assert composer.text == "/theme hermes-gruvbox "
        composer.load_text("")
        await type_text(pilot, "/theme hermes-")
        await type_keys(pilot, "tab")  # several share nothing more: the first goes in
        first = composer.text
        await type_keys(pilot, "tab")  # and the next Tab moves on
        assert first.startswith("/theme hermes-") and composer.text != first
        assert composer.text.removeprefix("/theme ") in app.themes.names()


async def test_tab_completes_models_from_the_config_and_session_titles(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await run_turn(pilot, "fix the flaky parser test")
        await app.run_command("/new")
        await pilot.pause()
        composer = app.composer
        composer.load_text("")
        await type_text(pilot, "/model oth")
        await type_keys(pilot, "tab")
        assert composer.text == "/model other:"
        composer.load_text("")
        await type_text(pilot, "/model scripted:t")
        await type_keys(pilot, "tab")
        assert composer.text == "/model scripted:test-model "
        composer.load_text("")
        await type_text(pilot, "/resume flaky")
        await type_keys(pilot, "tab")
        assert composer.text == "/resume fix the flaky parser test "


def test_the_servers_model_lists_join_the_configured_models(hermes_home):
    from agent.config import load_config

    config = load_config()
    asked: list[str] = []

    def lister(provider):
        asked.append(provider.name)
        return ("served-a", "served-b")

    catalog = ModelCatalog(config, lister)
    before = catalog.refs(None)
    assert "demo:served-a" not in before
    catalog.fetch()
    catalog._fetching.join(5)
    assert asked == sorted(config.providers)
    assert "demo:served-a" in catalog.refs(None)


async def test_the_picker_finds_a_file_and_enter_inserts_it(
    make_app, scripted_in_process, workspace
):
    (workspace / "src" / "parser.py").write_text("def parse():\n    return 42\n")
    server = scripted_in_process({"replies": [reply("It returns 42.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_text(pilot, "explain @pars")
        await picker_shows(pilot, app, "src/parser.py")
        assert app.query_one("#hints").has_class("-picker")
        await type_keys(pilot, "enter")
        assert app.composer.text == "explain @src/parser.py "
        assert not app.completion.picking
        await type_keys(pilot, "enter")
        await app.wait_for_turn()
        await pilot.pause()
        [message] = app.transcript.query(UserMessage)
        assert message.text == "explain @src/parser.py "
        assert [a["path"] for a in message.attachments] == ["src/parser.py"]
        user = server.requests[-1].body["messages"][-1]["content"]
        assert "def parse():" in user and user.startswith("explain @src/parser.py")


async def test_picker_keys_move_the_highlight_and_escape_closes_it(make_app, workspace):
    for name in ("alpha.txt", "alpine.txt", "alps.txt"):
        (workspace / name).write_text(name)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_text(pilot, "@al")
        await picker_shows(pilot, app, "alps.txt")
        first = app.completion.paths[0]
        await type_keys(pilot, "down")
        assert app.completion.highlight == 1 and app.composer.text == "@al"
        await type_keys(pilot, "tab")
        assert app.composer.text == f"@{app.completion.paths[1]} "
        assert app.completion.paths[1] != first
        await type_text(pilot, "@al")
        await picker_shows(pilot, app, "alps.txt")
        await type_keys(pilot, "escape")
        assert not app.completion.picking and not app.query_one("#hints").display
        await type_text(pilot, "p")
        assert app.composer.text.endswith("@alp")


async def test_a_folder_pick_opens_the_next_level(make_app, workspace):
    (workspace / "src" / "deep").mkdir()
    (workspace / "src" / "deep" / "leaf.py").write_text("x = 1\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_text(pilot, "@src/dee")
        await picker_shows(pilot, app, "src/deep/")
        app.completion.highlight = app.completion.paths.index("src/deep/")
        await type_keys(pilot, "tab")
        assert app.composer.text == "@src/deep/"
        await picker_shows(pilot, app, "src/deep/leaf.py")


async def test_a_custom_command_completes_runs_and_shows_as_typed(
    make_app, scripted_in_process, workspace
):
    commands = workspace / ".hermes-tui" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: <file>\n---\n"
        "Review $1 carefully; focus: $ARGUMENTS. Here it is: @$1\n"
    )
    server = scripted_in_process({"replies": [reply("Looks fine.")]})
    app = make_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await type_text(pilot, "/rev")
        await wait_until(pilot, lambda: "/review" in str(app.query_one("#hints").render()))
        assert "Review a file" in str(app.query_one("#hints").render())
        await type_keys(pilot, "tab")
        assert app.composer.text == "/review "
        await type_text(pilot, "app.py")
        await type_keys(pilot, "enter")
        await app.wait_for_turn()
        await pilot.pause()
        [message] = app.transcript.query(UserMessage)
        assert message.text == "/review app.py"
        assert [a["path"] for a in message.attachments] == ["app.py"]
        sent = server.requests[-1].body["messages"][-1]["content"]
        assert sent.startswith("Review app.py carefully; focus: app.py. Here it is: @app.py")
        assert "print('hello')" in sent
        row = [r for r in await app.db.load_messages(app.agent.session_id) if r["role"] == "user"]
        assert row[0]["display_metadata"]["shown"] == "/review app.py"
        assert json.dumps(row[0]["content"]).count("attached_file") == 2


async def test_the_picker_grows_and_shrinks_with_its_results_and_shows_each_query(
    make_app, workspace
):
    for i in range(12):
        (workspace / f"note{i:02}.txt").write_text("x")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        popup = app.query_one("#hints")

        async def shows(query: str, rows: int) -> None:
            await wait_until(
                pilot,
                lambda: (
                    app.completion.paths_for == query
                    and popup.size.height == rows + 1
                    and f"@{query}" in str(popup.render())
                ),
                what=lambda: f"{rows} rows for {query!r} (height {popup.size.height})",
            )

        await type_text(pilot, "@note")
        await shows("note", 8)  # a repaint of the same rows: no reflow, still the new query
        await type_text(pilot, "0")
        await shows("note0", 8)
        await type_text(pilot, "3")
        await shows("note03", 1)
        await type_keys(pilot, "backspace", "backspace")
        await shows("note", 8)
