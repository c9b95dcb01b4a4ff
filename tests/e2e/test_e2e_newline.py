"""Newline keys in a real terminal (issue 17 item 2): tmux sends alt+Enter as ESC CR, the
exact case that used to send a half-written message; ctrl+j is LF in every terminal."""

from __future__ import annotations

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]

COMPOSER = "Ask anything"


def test_alt_enter_and_ctrl_j_add_lines_and_only_enter_sends(terminal, model_server, workspace):
    model_server({"replies": [{"echo": True}]})
    terminal.start_app(workspace)
    screen = terminal.wait_for(COMPOSER)
    # In tmux shift+Enter is a bare CR: the key bar offers the key tmux can send.
    assert "^j newline" in screen.splitlines()[-1] and "shift+⏎" not in screen
    terminal.send("first line")
    terminal.send("M-Enter")  # ESC CR
    terminal.send("second line")
    terminal.send("C-j")  # LF
    terminal.send("third line")
    # All three, not the first frame with the last: under load a frame can show the new
    # line before the composer has grown to hold the others (they are scrolled above it).
    screen = terminal.wait_for("first line", "second line", "third line")
    lines = screen.splitlines()
    rows = [i for i, line in enumerate(lines) for text in ("first", "second", "third") if
            f"{text} line" in line]  # fmt: skip
    assert len(rows) == 3 and rows == sorted(rows) and rows[2] - rows[0] == 2, screen
    assert "echo:" not in screen and "writing" not in screen, "nothing was sent yet"
    terminal.send("Enter")
    # The echo streams before the turn ends: wait for both (4 workers make the pane slower).
    screen = terminal.wait_for("echo: first line", "idle")
    assert "second line" in screen
    assert screen.count("echo:") == 1, "one message, sent once"


def test_a_trailing_backslash_still_adds_a_line(terminal, model_server, workspace):
    model_server({"replies": [{"echo": True}]})
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER)
    terminal.send("one \\", "Enter", "two")
    screen = terminal.wait_for("two")
    assert "echo:" not in screen
    terminal.send("Enter")
    screen = terminal.wait_for("echo: one")
    assert "two" in screen
