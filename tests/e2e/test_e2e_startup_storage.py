"""A database the app cannot use at start-up, in a real terminal (issue 17 item 5): one
sentence naming the file and what to do, exit status 1, no traceback, the terminal back."""

from __future__ import annotations

import sqlite3

import pytest
from e2e.terminal import needs_tmux

pytestmark = [needs_tmux, pytest.mark.e2e]


def newer_schema(db) -> None:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.commit()
    conn.close()


def not_a_database(db) -> None:
    db.write_bytes(b"garbage, not a database " * 400)


@pytest.mark.parametrize(
    ("damage", "sentence"),
    [
        (newer_schema, "has schema version 999, newer than"),
        (not_a_database, "is corrupt or not a SQLite database"),
    ],
)
def test_an_unusable_database_is_one_sentence_and_a_clean_exit(
    terminal, hermes_home, workspace, damage, sentence
):
    damage(hermes_home / "state.db")
    terminal.start_app(workspace)
    assert terminal.wait_for_exit() == 1
    # The pane and what scrolled above it, its wrapped lines joined (-J).
    pane = ("capture-pane", "-p", "-J", "-S", "-100", "-t", terminal.TARGET)
    screen = terminal.tmux(*pane).stdout
    flat = " ".join(screen.split())
    assert f"The session database {hermes_home / 'state.db'} " in flat, screen
    assert sentence in flat, screen
    assert "Traceback" not in screen and "locals" not in screen, screen
    assert screen.count("hermes-tui:") == 1, screen
    # Textual left the alternate screen: the pane holds the sentence, not the app's frame.
    assert "Ask anything" not in screen and "▔" not in screen, screen
