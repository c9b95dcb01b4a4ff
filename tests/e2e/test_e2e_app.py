"""The installed `hermes-tui` in a real terminal, driven by keys as a user drives it.

Each test starts the console script in a private tmux server, against `hermes-tui
scripted-server` in its own process, with an isolated HERMES_TUI_HOME. What the tests read is
the pane's text, as the user would see it; waits poll the pane with a deadline.
"""

from __future__ import annotations

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]

COMPOSER = "Ask anything"
ARMED = "y yes · n or Esc no"  # the approval dialog's hint once keys answer it
NEWLINE_KEY = "^j newline"  # in the footer while the composer has the focus (tmux: no shift+⏎)
HELD = {"chunk_size": 9, "gate_after": 2}
"""A reply that streams its first nine characters and then waits at its gate."""


def test_the_first_frame_shows_the_whole_layout(terminal, model_server, workspace):
    """U1: sessions (left), transcript (centre), status panel, composer and footer."""
    model_server({"replies": [{"text": "unused"}]})
    terminal.start_app(workspace)
    parts = ("Sessions", "Model", "scripted:test-model", "tokens", "context", "Turn", "idle")
    screen = terminal.wait_for(COMPOSER, "^q quit", "esc stop", "f1 help", *parts)
    lines = screen.splitlines()
    # Three columns: the sessions panel ends where the transcript begins, and the status
    # panel begins where it ends; the transcript of a new session is empty.
    top = lines[0]
    left, right = top.index("▕"), top.index("▏")
    assert top[:left].strip() == "Sessions" and top[right + 1 :].strip() == "Model"
    assert top[left + 1 : right].strip() == ""
    assert all(line[left] == "▕" for line in lines[: len(lines) - 1] if len(line) > left)
    # The composer sits under the transcript, the footer with the live keys under it all.
    composer = next(i for i, line in enumerate(lines) if COMPOSER in line)
    assert lines[composer].index(COMPOSER) > left
    assert "quit" in lines[-1] and composer == len(lines) - 2


def test_a_tool_turn_through_the_approval_dialog(terminal, model_server, workspace):
    """A4, H2: a write waits for a yes in a dialog that arms first; then tool and answer."""
    model_server(
        {
            "replies": [
                {
                    "text": "Let me write it.",
                    "tool_calls": [
                        {
                            "id": "w1",
                            "name": "write_file",
                            "arguments": {"path": "notes.txt", "content": "hello from e2e\n"},
                        }
                    ],
                },
                {"text": "I wrote notes.txt for you. ANSWER-DONE"},
            ]
        },
        approval="ask",
    )
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER)
    terminal.send("please write notes", "Enter")
    terminal.wait_for("Allow write_file?", "+hello from e2e")
    assert not (workspace / "notes.txt").exists()
    terminal.wait_for(ARMED)
    terminal.send("y")
    screen = terminal.wait_for("ANSWER-DONE")
    tool_line = next(line for line in screen.splitlines() if "write_file notes.txt" in line)
    assert "✓ ok" in tool_line
    assert "Allow write_file?" not in screen
    assert (workspace / "notes.txt").read_text() == "hello from e2e\n"


def test_a_line_typed_during_a_turn_is_queued_and_runs_after_it(terminal, model_server, workspace):
    """T1: Enter during a turn queues the line, shown in the status panel; it runs next."""
    server = model_server(
        {
            "replies": [
                {**HELD, "text": "Working on the first. FIRST-DONE", "gate": "first"},
                {"text": "The second is done. SECOND-DONE"},
            ]
        }
    )
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER)
    terminal.send("first task", "Enter")
    terminal.wait_for("Working", "writing")  # the reply streams, held at its gate
    terminal.send("second task", "Enter")
    screen = terminal.wait_for("Queue (1)", "1 second task")
    assert "SECOND-DONE" not in screen
    server.open_gate("first")
    screen = terminal.wait_for("SECOND-DONE")
    assert "Queue (" not in screen
    order = [screen.index(text) for text in ("first task", "FIRST-DONE", "▌ second task")]
    assert order == sorted(order) and order[-1] < screen.index("SECOND-DONE")


def test_escape_stops_mid_stream_and_keeps_the_partial_answer(terminal, model_server, workspace):
    """T6: Esc stops the turn at once; the part of the answer already shown stays."""
    model_server(
        {
            "replies": [
                {**HELD, "text": "KEPT-PART and the rest never comes", "gate": "never"},
            ]
        }
    )
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER)
    terminal.send("tell me everything", "Enter")
    terminal.wait_for("KEPT-PART", "writing")
    terminal.send("Escape")
    screen = terminal.wait_for("■ stopped", "● stopped")
    assert "KEPT-PART" in screen and "rest never comes" not in screen
    assert "writing" not in screen


def test_a_session_resumes_from_the_panel_after_a_restart(terminal, model_server, workspace):
    """D3: quit, start again, pick the session in the sessions panel, see its history."""
    model_server({"replies": [{"text": "I will remember. REMEMBERED-ANSWER"}]})
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER)
    terminal.send("remember this", "Enter")
    terminal.wait_for("REMEMBERED-ANSWER", "idle")
    terminal.send("C-q")
    assert terminal.wait_for_exit() == 0
    terminal.start_app(workspace)
    screen = terminal.wait_for(COMPOSER, "remember this")  # listed in the sessions panel
    assert "REMEMBERED-ANSWER" not in screen  # a new start opens a new session
    terminal.send("C-o")  # focus the sessions panel; the newest session is highlighted
    terminal.wait_until_gone(NEWLINE_KEY)  # the footer shows the list's keys, not the composer's
    terminal.send("Enter")
    screen = terminal.wait_for("REMEMBERED-ANSWER", "▌ remember this")
    assert screen.index("▌ remember this") < screen.index("REMEMBERED-ANSWER")
