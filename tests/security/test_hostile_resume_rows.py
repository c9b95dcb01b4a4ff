"""Hostile text in what issue 17 added to the screen: a server's error in a resumed
`request_failed` / `turn_failed` row, a session's stored workspace in the sessions panel and
the workspace question, and a 5xx message quoted in a sentence. None of it reaches the
terminal as a control sequence, and each stays one line (SPEC H1)."""

from __future__ import annotations

import re

import pytest
from helpers import write_config
from integration.test_headless_errors import run_cli

from agent.scripted import Script, ScriptedServer
from hermes_tui.screens.workspace import WorkspaceScreen
from hermes_tui.widgets.markers import marker_text
from hermes_tui.widgets.sessions_panel import session_label

HOSTILE = "boom\x1b]0;pwned\x07\x1b[2J\u202eevil\nsecond line\r" + "x" * 5000
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b\u202e]")


def test_a_stored_error_renders_as_one_safe_short_line():
    from hermes_tui.widgets.markers import Marker

    kind = "turn_failed"
    text = marker_text(kind, {"error": HOSTILE, "withheld": 1})
    shown = Marker(kind, text).text
    assert not RAW.search(shown) and "\n" not in shown, repr(shown[:200])
    assert len(shown) < 300 and "pwned" in shown


def test_a_hostile_workspace_is_shown_safely_in_the_panel():
    session = {"id": "s1", "title": "t", "workspace": "/tmp/" + HOSTILE[:60], "model": "m"}
    label = str(session_label(session, current=False, now=0.0, elsewhere=True))
    assert not RAW.search(label.replace("\n", "", 1)), repr(label)


def test_a_hostile_workspace_is_shown_safely_in_the_question():
    screen = WorkspaceScreen(HOSTILE[:80], "/tmp/" + HOSTILE[:60], "/here")
    for text in (screen.title_text, screen.there):
        assert not RAW.search(text), repr(text)


@pytest.fixture
def server(hermes_home):
    down = {"status": 500, "error_message": HOSTILE}
    running = ScriptedServer(Script.from_dict({"replies": [down, down]})).start()
    write_config(hermes_home, running, agent={"max_retries": 2})
    yield running
    running.stop()


def test_a_hostile_5xx_message_is_one_safe_capped_line(hermes_home, server):
    proc = run_cli(hermes_home, "run", "hello")
    assert proc.returncode == 1
    [line] = [line for line in proc.stderr.splitlines() if line.startswith("hermes-tui:")]
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and "\u202e" not in proc.stderr
    assert "HTTP 500" in line and len(line) < 400, line[:500]
