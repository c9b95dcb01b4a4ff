"""Deterministic SVG snapshots of what the agent changed: diffs, the rewind picker, forks."""

from __future__ import annotations

from pathlib import Path

from ui.tui_helpers import reply, run_turn

OPS = (
    "def add(a, b):\n"
    "    return a + b\n"
    "\n"
    "\n"
    "def sub(a, b):\n"
    "    return a + b  # wrong\n"
    "\n"
    "\n"
    "def mul(a, b):\n"
    "    return a * b\n"
)


def _fix_sub(workspace: Path) -> dict:
    (workspace / "ops.py").write_text(OPS, encoding="utf-8")
    arguments = {
        "path": "ops.py",
        "old_string": "    return a + b  # wrong\n",
        "new_string": '    """a minus b."""\n    return a - b\n',
    }
    return {
        "replies": [
            reply(
                "Fixing sub.",
                tool_calls=[{"id": "e1", "name": "edit_file", "arguments": arguments}],
            ),
            reply("Fixed: `sub` subtracts now."),
        ]
    }


async def _turn(pilot, text: str) -> None:
    """Run a turn (its tool durations show as 0.0s: the probes fix them)."""
    await run_turn(pilot, text)
    await pilot.pause()


def test_diff_tool_block_narrow(snap_compare, make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(_fix_sub(workspace)), approval="yolo")

    async def turn(pilot):
        await _turn(pilot, "fix sub in ops.py")

    assert snap_compare(app, terminal_size=(100, 32), run_before=turn)


def test_diff_tool_block_side_by_side(snap_compare, make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(_fix_sub(workspace)), approval="yolo")

    async def turn(pilot):
        await _turn(pilot, "fix sub in ops.py")

    assert snap_compare(app, terminal_size=(214, 32), run_before=turn)


def _two_turns(workspace: Path) -> dict:
    script = _fix_sub(workspace)
    notes = {"path": "NOTES.md", "content": "# notes\n\nsub was wrong.\n"}
    script["replies"] += [
        reply("Noting it.", tool_calls=[{"id": "w1", "name": "write_file", "arguments": notes}]),
        reply("Noted in NOTES.md."),
    ]
    return script


def test_rewind_picker(snap_compare, make_app, scripted_in_process, workspace):
    from waits import wait_until

    from hermes_tui.screens.rewind import RewindScreen

    app = make_app(scripted_in_process(_two_turns(workspace)), approval="yolo")

    async def picker(pilot):
        await _turn(pilot, "fix sub in ops.py")
        await _turn(pilot, "write a note about it")
        await app.submit("/rewind")
        await wait_until(pilot, lambda: isinstance(app.screen, RewindScreen), what="the picker")
        await pilot.pause()

    # Tall enough for the whole transcript behind the picker: no scroll position to vary.
    assert snap_compare(app, terminal_size=(100, 44), run_before=picker)


def test_sessions_panel_with_a_fork(snap_compare, make_app, scripted_in_process, workspace):
    app = make_app(scripted_in_process(_two_turns(workspace)), approval="yolo")

    async def forked(pilot):
        await _turn(pilot, "fix sub in ops.py")
        await app.submit("/fork")
        await pilot.pause()
        await app.changes.wait()
        await _turn(pilot, "write a note about it")

    # Tall enough for the whole transcript: no scroll position to vary.
    assert snap_compare(app, terminal_size=(110, 44), run_before=forked)
