"""The newline keys' terminal side (issue 17 item 2): ESC CR is alt+enter, not Enter."""

from __future__ import annotations

import pytest
from textual._xterm_parser import XTermParser

from hermes_tui import terminal_keys


def keys_of(data: str) -> list[str]:
    parser = XTermParser()
    return [event.key for event in [*parser.feed(data), *parser.feed("")] if hasattr(event, "key")]


@pytest.mark.parametrize("sequence", terminal_keys.ALT_ENTER_SEQUENCES)
def test_esc_cr_and_esc_lf_are_alt_enter(sequence):
    terminal_keys.install()
    assert keys_of(sequence) == ["alt+enter"]
    assert keys_of("a" + sequence + "b") == ["a", "alt+enter", "b"]


def test_enter_and_ctrl_j_stay_what_they_are():
    terminal_keys.install()
    assert keys_of("\r") == ["enter"] and keys_of("\n") == ["ctrl+j"]


@pytest.mark.parametrize(
    ("environ", "reported"),
    [
        ({"TERM": "xterm-kitty"}, True),
        ({"TERM_PROGRAM": "WezTerm"}, True),
        ({"TERM": "xterm-ghostty"}, True),
        ({"TERM": "xterm-kitty", "TMUX": "/run/tmux-0/default,1,0"}, False),
        ({"TERM": "tmux-256color", "TMUX": "x"}, False),
        ({"TERM": "xterm-256color"}, False),
        ({"TERM_PROGRAM": "Apple_Terminal"}, False),
    ],
)
def test_the_key_bar_shows_a_newline_key_the_terminal_sends(environ, reported):
    keys = terminal_keys.newline_keys(environ)
    assert keys.split(",")[0] == ("shift+enter" if reported else "ctrl+j")
    assert set(keys.split(",")) == {"shift+enter", "alt+enter", "ctrl+j"}
