"""A user hook's run as a row in the transcript, live and on resume, and /hooks (SPEC N4)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from ui.tui_helpers import FIXED_NOW, TEST_ARM_SECONDS, quick_probes, reply, run_turn, write_config
from waits import wait_until

from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.markers import Marker
from hermes_tui.widgets.messages import NoticeLine, UserMessage
from hermes_tui.widgets.notes import RecoveryNote

SIZE = (120, 36)


def hooked_app(home: Path, workspace: Path, server: Any, hooks: dict[str, Any]) -> HermesApp:
    """An app on `server` whose config.yaml has `hooks`, built as make_app builds one."""
    write_config(home, server.openai_base_url, retry_base_seconds=0.01, approval="yolo")
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**config, "hooks": hooks}))
    probes = quick_probes(
        now=lambda: FIXED_NOW, clock=lambda: 0.0, approval_arm_seconds=TEST_ARM_SECONDS
    )
    return HermesApp(load_config(), workspace=workspace, probes=probes)


def lint_hooks(tmp_path: Path) -> dict[str, Any]:
    """An after_tool linter that finds two problems, and a turn_end hook that crashes."""
    lint = tmp_path / "lint.py"
    lint.write_text("import sys, json\njson.load(sys.stdin)\nprint('Found 2 problems in app.py')\n")
    crash = tmp_path / "crash.py"
    crash.write_text("raise SystemExit('tests could not start')\n")
    return {
        "after_tool": [
            {"match": "write_file", "command": f"{sys.executable} {lint}", "name": "ruff"}
        ],
        "turn_end": [{"command": f"{sys.executable} {crash}", "name": "pytest"}],
    }


def write_reply() -> dict[str, Any]:
    args = {"path": "app.py", "content": "print('hi')\n"}
    return reply(tool_calls=[{"id": "w1", "name": "write_file", "arguments": args}])


def markers(app: HermesApp) -> list[str]:
    return [marker.text for marker in app.transcript.query(Marker)]


async def test_n4_each_hook_run_is_a_row_live_and_after_a_resume(
    scripted_in_process, hermes_home, workspace, tmp_path
):
    """N4: `◈ hook ruff: Found 2 problems…` after the write and the crashed turn_end hook
    named, in the live transcript; the same rows come back when the session is resumed."""
    server = scripted_in_process({"replies": [write_reply(), reply("Done.")]})
    app = hooked_app(hermes_home, workspace, server, lint_hooks(tmp_path))
    expected = [
        "◈ hook ruff: Found 2 problems in app.py (after_tool)",
        "◈ hook pytest: failed (exit 1: tests could not start) (turn_end)",
    ]
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await run_turn(pilot, "tidy app.py")
        assert markers(app) == expected
        session = app.agent.session_id
        await app.submit("/new")
        await wait_until(pilot, lambda: not markers(app), what="a new session")
        await app.submit(f"/resume {session}")
        await wait_until(pilot, lambda: markers(app) == expected, what="the rows on resume")


async def test_n4_a_turn_end_hooks_feedback_shows_as_its_row_not_as_a_user_message(
    scripted_in_process, hermes_home, workspace, tmp_path
):
    """N4: the agent sent back by a turn_end hook: live and on resume the transcript shows
    the hook's row and the user's own message only (the feedback is the app's note)."""
    count = tmp_path / "count"
    tests = tmp_path / "tests.py"
    tests.write_text(
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(count)!r})\n"
        "if not p.exists():\n    p.touch(); sys.stderr.write('FAILED test_x'); sys.exit(2)\n"
    )
    hooks = {"turn_end": [{"command": f"{sys.executable} {tests}", "name": "pytest"}]}
    server = scripted_in_process({"replies": [reply("Done."), reply("Fixed test_x.")]})
    app = hooked_app(hermes_home, workspace, server, hooks)
    users = lambda: [m.text for m in app.transcript.query(UserMessage)]  # noqa: E731
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await run_turn(pilot, "fix the tests")
        assert markers(app) == [
            "◈ hook pytest: sent the agent back: FAILED test_x (turn_end)",
            "◈ hook pytest: ok (turn_end)",
        ]
        assert users() == ["fix the tests"]
        session = app.agent.session_id
        await app.submit("/new")
        await wait_until(pilot, lambda: not markers(app), what="a new session")
        await app.submit(f"/resume {session}")
        await wait_until(pilot, lambda: len(markers(app)) == 2, what="the rows on resume")
        assert users() == ["fix the tests"]
        assert not app.transcript.query(RecoveryNote)


async def test_n4_hooks_lists_the_hooks_and_a_project_hook_waits_for_allow(
    scripted_in_process, hermes_home, workspace, tmp_path
):
    """N4: /hooks names each hook, where it is from and that the project's waits; /hooks
    allow gives the consent."""
    (workspace / ".hermes-tui").mkdir()
    (workspace / ".hermes-tui" / "hooks.yaml").write_text("prompt: [{command: echo project}]\n")
    server = scripted_in_process({"replies": [reply("ok")]})
    app = hooked_app(hermes_home, workspace, server, lint_hooks(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await app.ready()
        await app.submit("/hooks")
        lines = lambda: [n.text for n in app.transcript.query(NoticeLine)]  # noqa: E731
        await wait_until(pilot, lambda: any("prompt: echo project" in t for t in lines()))
        listing = next(t for t in lines() if "prompt: echo project" in t)
        assert "after_tool write_file:" in listing and "(config, 30 s)" in listing
        assert "(project, 30 s, not allowed: /hooks allow)" in listing
        await app.submit("/hooks allow")
        await wait_until(pilot, lambda: any("Allowed this project's 1 hook" in t for t in lines()))
        assert app.agent.hooks.project_allowed


def test_n4_the_hook_rows_in_the_transcript(
    snap_compare, scripted_in_process, hermes_home, workspace, tmp_path
):
    """N4: a linter's row under the write's tool block, and a crashed hook named."""
    server = scripted_in_process({"replies": [write_reply(), reply("Done: app.py prints hi.")]})
    app = hooked_app(hermes_home, workspace, server, lint_hooks(tmp_path))

    async def ran(pilot):
        await app.ready()
        await run_turn(pilot, "tidy app.py")
        await wait_until(pilot, lambda: len(markers(app)) == 2, what="the hook rows")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=ran)
