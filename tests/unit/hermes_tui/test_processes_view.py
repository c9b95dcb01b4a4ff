"""The background processes as the screen shows them (G2): terminal-safe rows, detail and
panel lines, whatever the command and its output hold (H1)."""

from __future__ import annotations

import subprocess

from agent.background import BackgroundProcess
from hermes_tui.processes_view import panel_rows, process_detail, process_row
from hermes_tui.widgets.status_panel import _background_lines


def ended(command: str, output: bytes) -> BackgroundProcess:
    """A listed process that has ended, with `output` in its ring."""
    proc = subprocess.Popen(["true"], stdout=subprocess.PIPE)
    proc.communicate(timeout=10)
    entry = BackgroundProcess("bg1", command, proc, private_network=False)
    entry.ring.feed(output)
    return entry


def test_g2_a_hostile_command_and_output_reach_the_screen_inert():
    """G2, H1: an escape sequence in the command or the output is shown, never sent."""
    entry = ended("echo \x1b]0;owned\x07 hi", b"\x1b[2J\x1b[31mred\x1b[0m\nok\n")
    row = process_row(entry, now=entry.started_at + 5)
    detail = process_detail(entry)
    assert "\x1b" not in row and "\x07" not in row
    assert "\x1b" not in detail
    assert row.startswith("bg1  exited with code 0")
    assert detail.splitlines()[-2:] == ["red", "ok"]


def test_g2_the_status_panel_cuts_long_rows_and_counts_the_rest():
    rows = tuple(f":{8000 + n} python3 -m http.server {8000 + n}" for n in range(5))
    lines = [str(line) for line in _background_lines(rows)]
    assert lines[0] == "5 background (/ps)"
    assert lines[1] == "⚙ :8000 python3 -m htt…"
    assert len(lines[1]) <= 23
    assert lines[-1] == "  and 2 more"
    assert panel_rows([]) == ()
