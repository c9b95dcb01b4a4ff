"""`hermes-tui -c` opens the session last used in this folder (issue 29 item 8, D3): its
transcript is on the first screen, not an empty one, and a newer session of another folder
is not the one it picks."""

from __future__ import annotations

import pytest
from e2e.terminal import needs_tmux
from waits import wait_until

pytestmark = [needs_tmux, pytest.mark.e2e]

COMPOSER = "Ask anything"
IDLE = "● idle"


def one_turn(terminal, task: str, answer: str) -> None:
    terminal.wait_for(COMPOSER)
    terminal.send(task, "Enter")
    terminal.wait_for(answer, IDLE)  # the answer, and the turn over


def marked(screen: str) -> list[str]:
    """The sessions panel's lines marked current (`● `)."""
    lines = screen.splitlines()
    left = lines[0].index("▕") if lines and "▕" in lines[0] else 0
    return [line[:left] for line in lines if "● " in line[:left]]


def quit_app(terminal) -> None:
    terminal.send("C-q")
    assert terminal.wait_for_exit() == 0


def test_continue_opens_the_latest_session_of_this_folder(
    terminal, model_server, workspace, tmp_path
):
    """D3: two sessions here, then a newer one elsewhere; `-c` here shows the second one's
    messages (the one marked current in the panel), neither the first's nor the other
    folder's, and a turn goes on in it."""
    model_server(
        {
            "replies": [
                {"text": "ALPHA-DONE"},
                {"text": "BETA-DONE"},
                {"text": "GAMMA-DONE"},
                {"text": "DELTA-DONE"},
            ]
        }
    )
    terminal.start_app(workspace)
    one_turn(terminal, "alpha task", "ALPHA-DONE")
    terminal.send("C-n")
    terminal.wait_until_gone("ALPHA-DONE")
    one_turn(terminal, "beta task", "BETA-DONE")
    quit_app(terminal)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    terminal.start_app(elsewhere)
    one_turn(terminal, "gamma task", "GAMMA-DONE")
    quit_app(terminal)

    terminal.start_app(workspace, ["-c"])
    screen = terminal.wait_for("beta task", "BETA-DONE", COMPOSER)
    assert "ALPHA-DONE" not in screen and "GAMMA-DONE" not in screen, screen
    # The panel marks it current once its list is read again after the resume.
    screen = wait_until(
        lambda: "beta task" in " ".join(marked(screen := terminal.screen())) and screen,
        timeout=30,
        what=lambda: f"the panel marking beta current:\n{terminal.screen()}",
    )
    assert len(marked(screen)) == 1, screen
    one_turn(terminal, "delta task", "DELTA-DONE")
    assert "BETA-DONE" in terminal.screen(), "the turn went on in the continued session"
    quit_app(terminal)


def test_continue_with_nothing_here_is_one_sentence(terminal, model_server, workspace):
    """Bad input: `-c` in a folder with no session says so in one sentence, no traceback."""
    model_server({"replies": [{"text": "unused"}]})
    terminal.start_app(workspace, ["-c"])
    assert terminal.wait_for_exit() == 1
    pane = ("capture-pane", "-p", "-J", "-S", "-100", "-t", terminal.TARGET)
    screen = terminal.tmux(*pane).stdout
    flat = " ".join(screen.split())
    sentence = "hermes-tui: No session to continue in this folder: start one with hermes-tui,"
    assert sentence in flat, screen
    assert "Traceback" not in screen and COMPOSER not in screen, screen
