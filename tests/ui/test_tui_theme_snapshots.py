"""Snapshots of the app in several themes (deterministic: size, clock, home, scripted model)."""

from __future__ import annotations

from ui.tui_helpers import reply, run_turn

from hermes_tui.widgets.reasoning import ReasoningBlock
from hermes_tui.widgets.tool_block import ToolBlock

SIZE = (120, 36)


def themed_demo_turn(snap_compare, make_app, theme: str) -> bool:
    """A finished demo turn (reasoning, a tool, the answer) in `theme`."""
    app = make_app()

    async def turn(pilot):
        await app.ready()
        app.theme = theme
        await run_turn(pilot, "hello")

    return snap_compare(app, terminal_size=SIZE, run_before=turn)


def test_demo_turn_in_hermes_dark(snap_compare, make_app):
    assert themed_demo_turn(snap_compare, make_app, "hermes-dark")


def test_demo_turn_in_high_contrast(snap_compare, make_app):
    assert themed_demo_turn(snap_compare, make_app, "hermes-high-contrast")


def test_demo_turn_in_gruvbox(snap_compare, make_app):
    assert themed_demo_turn(snap_compare, make_app, "hermes-gruvbox")


def test_light_theme_with_a_tool_block_and_reasoning(snap_compare, make_app, scripted_in_process):
    server = scripted_in_process(
        {
            "replies": [
                reply(
                    "Let me look at the project.",
                    reasoning="The user wants the layout; listing the root is enough.",
                    tool_calls=[{"id": "a", "name": "list_dir", "arguments": {"path": "."}}],
                ),
                reply("The project has `app.py`, `README.md` and `src/`."),
            ]
        }
    )
    app = make_app(server)

    async def turn(pilot):
        await app.ready()
        app.theme = "hermes-light"
        await run_turn(pilot, "what is in this project?")
        for block in [*app.transcript.query(ToolBlock), *app.transcript.query(ReasoningBlock)]:
            block.expanded = True
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=turn)
