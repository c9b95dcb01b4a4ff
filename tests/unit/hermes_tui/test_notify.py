"""The bytes of a turn's notification (issue 29 item 6): the bell, OSC 9, OSC 777, tmux's
passthrough, and outside text cut to one clean line (H1)."""

from __future__ import annotations

from hermes_tui.notify import MAX_CHARS, clean, desktop_sequence, signal


def test_osc_9_by_default_and_osc_777_where_the_terminal_reads_it():
    assert desktop_sequence("The turn finished.", {"TERM": "xterm-256color"}) == (
        "\x1b]9;hermes-tui: The turn finished.\x07"
    )
    for env in ({"VTE_VERSION": "7600"}, {"TERM": "foot"}, {"TERM": "rxvt-unicode-256color"}):
        assert desktop_sequence("done", env) == "\x1b]777;notify;hermes-tui;done\x07"


def test_inside_tmux_the_sequence_goes_through_its_passthrough():
    assert desktop_sequence("done", {"TMUX": "tmux-socket,1,0"}) == (
        "\x1bPtmux;\x1b\x1b]9;hermes-tui: done\x07\x1b\\"
    )


def test_bell_and_off():
    assert signal("bell", "anything", {"TMUX": "x"}) == "\a"
    assert signal("off", "anything", {}) == ""
    assert signal("desktop", "x", {}).startswith("\x1b]9;")


def test_outside_text_is_one_short_line_without_control_characters():
    """H1: a tool name or error from the model cannot end the sequence or start another."""
    hostile = "run\x07_shell\x1b]52;c;cGF3bg==\x1b\\ ok;\nnext\u202eline\x9b31m" + "x" * 500
    line = clean(hostile)
    assert len(line) == MAX_CHARS and line.endswith("…")
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in line)
    assert "\u202e" not in line and ";" not in line
    sequence = desktop_sequence(hostile, {"TMUX": "1"})
    inner = sequence[len("\x1bPtmux;") : -len("\x1b\\")]
    # Exactly one OSC and its one terminator: nothing of the text escapes.
    assert inner.count("\x07") == 1 and inner.endswith("\x07")
    assert inner.replace("\x1b\x1b", "").count("\x1b") == 0
