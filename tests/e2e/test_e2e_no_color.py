"""NO_COLOR in a real terminal (issue 29 item 10): no colour code reaches the pane, whatever
the theme, the Markdown or the code highlighting; bold and reverse still mark things (U4)."""

from __future__ import annotations

import re

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]

SGR = re.compile(r"\x1b\[([0-9;:]*)m")
ANSWER = "# A title\n\nSome **bold** words.\n\n```python\nprint('highlighted')\n```\n"


def colour_codes(pane: str) -> list[str]:
    """Every SGR sequence of the pane that sets a colour (not the default one)."""
    found = []
    for match in SGR.finditer(pane):
        params = [p for p in re.split(r"[;:]", match.group(1)) if p]
        if any(p.isdigit() and (30 <= int(p) <= 38 or 40 <= int(p) <= 48 or 90 <= int(p) <= 107)
               for p in params):  # fmt: skip
            found.append(match.group(0))
    return found


def test_no_color_sends_no_colour_to_the_terminal(terminal, model_server, workspace):
    """U4: with NO_COLOR set, the pane holds no colour at all (Textual alone sent greys)."""
    model_server({"replies": [{"text": ANSWER}]})
    terminal.env["NO_COLOR"] = "1"
    terminal.start_app(workspace)
    terminal.wait_for("Ask anything", "every key and command")
    terminal.send("show me", "Enter")
    terminal.wait_for("print('highlighted')")
    pane = terminal.tmux("capture-pane", "-e", "-p", "-t", terminal.TARGET).stdout
    assert colour_codes(pane) == [], sorted(set(colour_codes(pane)))[:10]
    assert "\x1b[1m" in pane or re.search(r"\x1b\[[0-9;]*\b1\b[0-9;]*m", pane)  # bold stays
