"""A hook's run in headless output (SPEC N4, H1): a terminal-safe line on stderr in plain
output, the exact text in a `--json` event."""

from __future__ import annotations

import json

from agent import events as ev
from hermes_tui.headless import _Printer

ROW = {
    "event": "after_tool",
    "name": "ruff",
    "origin": "config",
    "outcome": "ok",
    "summary": "Found 2 problems \x1b[31min\x1b[0m app.py",
}


def test_n4_a_hook_row_is_a_safe_line_on_stderr(capsys):
    """N4, H1: `◈ hook ruff: …` on stderr; the escape a hook printed shows, never acts."""
    printer = _Printer(as_json=False)
    printer(ev.DisplayRow("hook", ROW))
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("◈ hook ruff: Found 2 problems ") and err.endswith("(after_tool)\n")
    assert "\x1b" not in err


def test_n4_a_hook_row_is_a_json_event_with_the_exact_text(capsys):
    """N4: `run --json` prints the row as a DisplayRow event, the hook's text kept exactly."""
    printer = _Printer(as_json=True)
    printer(ev.DisplayRow("hook", ROW))
    (line,) = capsys.readouterr().out.splitlines()
    event = json.loads(line)
    assert event["type"] == "DisplayRow" and event["kind"] == "hook"
    assert event["metadata"] == ROW
