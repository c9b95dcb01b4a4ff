"""Keyboard (U3): copy via OSC 52, message jumps, page scrolling, focus keys, remapping."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import yaml
from textual.widgets._markdown import MarkdownFence
from ui.tui_helpers import quick_probes, reply, run_turn, type_keys
from waits import wait_until

from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.key_bar import KeyBar
from hermes_tui.widgets.messages import AnswerBlock, UserMessage

LONG_LINE = "The answer is a single long line " + "that wraps on screen " * 12 + "and ends."
CODE = "def greet(name):\n    return f'hello {name}'\n"
ANSWER = f"{LONG_LINE}\n\n```python\n{CODE}```"
OSC52 = re.compile(r"\x1b\]52;c;([A-Za-z0-9+/=]*)\a")


def capture_writes(app: HermesApp) -> list[str]:
    """Everything the app writes to the terminal from now on."""
    written: list[str] = []
    write = app._driver.write

    def recording(data: str) -> None:
        written.append(data)
        write(data)

    app._driver.write = recording
    return written


def clipboard_payloads(written: list[str]) -> list[str]:
    """The texts sent to the terminal clipboard with OSC 52."""
    return [base64.b64decode(m).decode() for m in OSC52.findall("".join(written))]


async def test_copy_sends_the_answer_source_over_osc52(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply(ANSWER)]})
    app = make_app(server)
    async with app.run_test(size=(80, 30)) as pilot:
        await run_turn(pilot, "explain")
        written = capture_writes(app)
        await type_keys(pilot, "f4")
        # The source: no wrap newlines in the long line, no rendering indentation.
        assert clipboard_payloads(written) == [ANSWER]
        assert any("Copied the last answer" in n.message for n in app._notifications)


async def test_copy_takes_the_code_block_under_the_mouse(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply(ANSWER)]})
    app = make_app(server)
    async with app.run_test(size=(80, 30)) as pilot:
        await run_turn(pilot, "explain")
        fence = app.transcript.query_one(MarkdownFence)
        app.transcript.scroll_to_widget(fence, animate=False, immediate=True)
        await pilot.pause()
        await pilot.hover(MarkdownFence)
        written = capture_writes(app)
        await type_keys(pilot, "f4")
        assert clipboard_payloads(written) == [CODE.rstrip("\n")]
        assert any("Copied the code block" in n.message for n in app._notifications)


async def test_jump_keys_select_messages_and_copy_the_selected_one(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("first answer"), reply("second answer")]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await run_turn(pilot, "one")
        await run_turn(pilot, "two")
        await type_keys(pilot, "alt+up")
        assert isinstance(app.transcript.selected, AnswerBlock)
        assert app.transcript.selected.source == "second answer"
        await type_keys(pilot, "alt+up", "alt+up")
        assert app.transcript.selected.source == "first answer"
        assert app.transcript.selected.has_class("-selected")
        written = capture_writes(app)
        await type_keys(pilot, "f4")
        assert clipboard_payloads(written) == ["first answer"]
        await type_keys(pilot, "alt+up")
        assert isinstance(app.transcript.selected, UserMessage)
        await type_keys(pilot, "alt+down")
        assert app.transcript.selected.source == "first answer"


async def test_page_keys_scroll_the_transcript_from_the_composer(make_app, scripted_in_process):
    tall = "\n\n".join(f"paragraph {i}" for i in range(60))
    server = scripted_in_process({"replies": [reply(tall)]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await run_turn(pilot, "write a lot")
        transcript = app.transcript

        def at_bottom() -> bool:
            return transcript.scroll_y == transcript.max_scroll_y > 0

        # Compared with the bottom as it is each time: a last layout of the answer may still
        # grow the transcript after the turn ends.
        await wait_until(pilot, at_bottom, what="a tall transcript, at its bottom")
        assert app.focused is app.composer
        await type_keys(pilot, "pageup")
        await wait_until(pilot, lambda: not at_bottom(), what="page up")
        await type_keys(pilot, "pagedown")
        await wait_until(pilot, at_bottom, what="page down")


async def test_focus_keys(make_app):
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await app.ready()
        await type_keys(pilot, "ctrl+t")
        assert app.focused is app.transcript
        await type_keys(pilot, "ctrl+l")
        assert app.focused is app.composer
        await type_keys(pilot, "ctrl+o")
        assert app.focused is app.sessions_panel.option_list


async def test_remapped_keys_drive_actions_help_and_footer(
    make_app, scripted_in_process, hermes_home: Path
):
    server = scripted_in_process({"replies": [reply("remapped answer")]})
    app = make_app(server)
    config = hermes_home / "config.yaml"
    data = yaml.safe_load(config.read_text())
    data["keys"] = {"copy.answer": "f8", "transcript.previous": "f9"}
    config.write_text(yaml.safe_dump(data))
    app = HermesApp(
        load_config(),
        workspace=app.workspace,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await run_turn(pilot, "hi")
        written = capture_writes(app)
        await type_keys(pilot, "f4")
        assert clipboard_payloads(written) == []
        await type_keys(pilot, "f8")
        assert clipboard_payloads(written) == ["remapped answer"]
        await type_keys(pilot, "f9")
        assert isinstance(app.transcript.selected, AnswerBlock)
        shown = dict((description, keys) for keys, description in app.keys.help_rows())
        assert shown["copy"] == "f8" and shown["previous message"] == "f9"
        footer_keys = [entry[1] for entry in app.query_one(KeyBar).entries]
        assert "f8" in footer_keys and "f4" not in footer_keys


async def test_the_key_bar_lists_what_can_act_and_a_click_presses_the_key(
    make_app, scripted_in_process
):
    server = scripted_in_process({"replies": [reply("done", delay=0.02, chunk_size=1)]})
    app = make_app(server)
    async with app.run_test(size=(120, 30)) as pilot:
        bar = app.query_one(KeyBar)
        await wait_until(pilot, lambda: bar.entries, what="key bar filled")
        idle = [description for _key, _display, description, _enabled in bar.entries]
        assert "help" in idle and "quit" in idle
        # Steer and queue keys show only while they can act (check_action).
        assert "steer" not in idle and "queue" not in idle
        # A click on "f1 help" presses f1: the help screen opens.
        start = bar.column_of("f1")
        await pilot.click(KeyBar, offset=(start + 1, 0))
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await type_keys(pilot, "escape")
        await app.submit("stream slowly")
        await wait_until(
            pilot,
            lambda: "steer" in [entry[2] for entry in bar.entries],
            what="steer shown while busy",
        )
        await app.wait_for_turn(timeout=30)
        await wait_until(
            pilot,
            lambda: "steer" not in [entry[2] for entry in bar.entries],
            what="steer gone when idle",
        )
