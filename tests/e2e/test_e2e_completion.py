"""Tab and the `@` picker in a real terminal: the installed app in tmux (U2, P2)."""

from __future__ import annotations

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]

COMPOSER = "Ask anything"


def test_tab_completes_picks_a_file_and_otherwise_stays_put(terminal, model_server, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "parser.py").write_text("def parse():\n    return 42\n")
    model_server({"replies": [{"text": "It returns 42."}]})
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER, "scripted:test-model")
    # Nothing to complete: Tab does nothing, the next keys still land in the composer.
    terminal.send("plain", "Tab", " text")
    terminal.wait_for("plain text")
    terminal.send(*["BSpace"] * len("plain text"))
    terminal.wait_for(COMPOSER)
    terminal.send("explain @pars")
    terminal.wait_for("src/parser.py", "tab or enter picks")
    terminal.send("Tab")
    terminal.wait_for("explain @src/parser.py")
    terminal.wait_until_gone("tab or enter picks")
    terminal.send("Enter")
    screen = terminal.wait_for("It returns 42.", "src/parser.py · 2 lines")
    assert "return 42" not in screen  # the file went to the model, the chip to the screen
