"""shift+Tab cycles the approval mode in a real terminal (N1, issue 29 item 5): tmux sends
the key as the terminal does (`ESC [ Z`), and the status panel shows each mode."""

from __future__ import annotations

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]

COMPOSER = "Ask anything"


def test_shift_tab_cycles_ask_auto_edit_plan(terminal, model_server, workspace):
    """N1: ask -> auto-edit -> plan -> ask, each shown in the status panel as it switches."""
    model_server({"replies": [{"text": "unused"}]}, approval="ask")
    terminal.start_app(workspace)
    terminal.wait_for(COMPOSER, "mode ask")
    for mode in ("auto-edit", "plan", "ask"):
        terminal.send("BTab")
        screen = terminal.wait_for(f"mode {mode}")
        assert COMPOSER in screen, "the composer keeps its place (the key only switched modes)"
    assert "plan mode: no file changes" in terminal.screen(), "plan said what it means"
