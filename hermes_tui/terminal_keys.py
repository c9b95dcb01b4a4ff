"""Newline keys that work in the user's terminal (U3).

Most terminals (tmux, screen, every one without the kitty keyboard protocol) send alt+Enter
as ESC CR (or ESC LF) and shift+Enter as a bare CR. Textual's parser reads ESC CR as a plain
Enter, so alt+Enter sent a half-written message: `install()` names both sequences alt+enter.
ctrl+j (LF) works in every terminal; shift+Enter only where the terminal reports it, so the
key bar shows the first of these that the terminal the app runs in can send.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hermes_tui.textual_compat import add_key_sequence

ALT_ENTER_SEQUENCES = ("\x1b\r", "\x1b\n")
"""What a terminal sends for alt+Enter (ESC CR; some send ESC LF)."""
NEWLINE_KEYS_REPORTED = "shift+enter,alt+enter,ctrl+j"
"""The composer's newline keys where the terminal reports shift+Enter (shown first)."""
NEWLINE_KEYS_PLAIN = "ctrl+j,alt+enter,shift+enter"
"""The composer's newline keys elsewhere: ctrl+j first, the one every terminal sends."""
_KITTY_TERMS = ("xterm-kitty", "xterm-ghostty", "foot", "foot-extra", "wezterm")
_KITTY_PROGRAMS = ("kitty", "WezTerm", "ghostty")


def install() -> None:
    """Teach Textual's key parser the alt+Enter sequences (idempotent)."""
    for sequence in ALT_ENTER_SEQUENCES:
        add_key_sequence(sequence, "alt+enter")


def reports_shift_enter(environ: Mapping[str, str] | None = None) -> bool:
    """True when the terminal speaks the kitty keyboard protocol, so shift+Enter arrives as
    itself: kitty, WezTerm, ghostty or foot, outside a multiplexer (tmux, screen)."""
    env = os.environ if environ is None else environ
    if env.get("TMUX") or env.get("STY"):
        return False
    return (
        env.get("TERM", "") in _KITTY_TERMS
        or env.get("TERM_PROGRAM", "") in _KITTY_PROGRAMS
        or bool(env.get("KITTY_WINDOW_ID"))
    )


def newline_keys(environ: Mapping[str, str] | None = None) -> str:
    """The composer's newline keys, the one the key bar shows first."""
    return NEWLINE_KEYS_REPORTED if reports_shift_enter(environ) else NEWLINE_KEYS_PLAIN
