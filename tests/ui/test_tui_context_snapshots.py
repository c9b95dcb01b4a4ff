"""Snapshots of the project's own context: the @ picker, a message with attachments (P2)."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn, type_keys
from waits import wait_until

SIZE = (120, 36)


def populate(workspace) -> None:
    files = {
        "src/parser.py": "def parse(text):\n    return text.split()\n",
        "src/scanner.py": "def scan():\n    pass\n",
        "src/widgets/switch.py": "class Switch:\n    pass\n",
        "docs/setup.md": "# Setup\n",
        "tests/test_parser.py": "def test_parse():\n    assert True\n",
    }
    for rel, text in files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")


def test_the_file_picker(snap_compare, make_app, workspace):
    populate(workspace)
    app = make_app()

    async def typing(pilot):
        await app.ready()
        await type_keys(pilot, *"explain @pars")
        await wait_until(pilot, lambda: app.completion.paths_for == "pars", what="the ranking")
        await type_keys(pilot, "down")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=typing)


def test_a_message_with_attachments(snap_compare, make_app, scripted_in_process, workspace):
    populate(workspace)
    (workspace / "src" / "AGENTS.md").write_text("Keep functions short.\n")
    read = {"id": "r1", "name": "read_file", "arguments": {"path": "src/scanner.py"}}
    server = scripted_in_process(
        {
            "replies": [
                reply("Reading the scanner too.", tool_calls=[read]),
                reply("`parse` splits on whitespace; `scan` does nothing yet."),
            ]
        }
    )
    app = make_app(server)

    async def turn(pilot):
        await run_turn(pilot, "compare @src/parser.py with @tests/ and @logo.png")

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)
