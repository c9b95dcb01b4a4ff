"""The status panel's setup hint never wraps mid-word (issue 17 item 10)."""

from __future__ import annotations

import pytest

from agent.config import SETUP_HINT
from hermes_tui.widgets.status_panel import TEXT_WIDTH, hint_lines

PATHS = ["~/hermes-home/config.yaml", "~/.config/hermes-tui/config.yaml", "/srv/a/b/c.yaml"]


@pytest.mark.parametrize("path", PATHS)
def test_the_demo_hint_breaks_at_spaces_and_slashes_only(path):
    hint = SETUP_HINT.format(config=path)
    lines = hint_lines(hint)
    assert all(len(line) <= TEXT_WIDTH for line in lines)
    # Joined again (a line that ends in "/" goes on without a space), nothing is lost.
    joined = ""
    for line in lines:
        joined += line if joined.endswith("/") or not joined else " " + line
    assert joined == hint
    words = set(hint.replace("/", "/ ").split())
    assert all(set(line.replace("/", "/ ").split()) <= words for line in lines)


def test_a_word_longer_than_a_line_keeps_its_tail():
    assert hint_lines("x" * 40) == ["…" + "x" * (TEXT_WIDTH - 1)]
