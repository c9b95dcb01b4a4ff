"""/export's arguments: a format, a path, or both; an unknown format is refused (X2)."""

from pathlib import Path

import pytest

from hermes_tui.export import ExportError, parse_arguments

WS = Path("ws")
HOME = Path("app-home")


def test_no_argument_writes_markdown_under_the_apps_home_not_in_the_repository():
    """Issue 29 item 10: no untracked file dropped in the repository root (U2)."""
    assert parse_arguments("", "s1", WS, HOME) == ("md", HOME / "exports" / "hermes-session-s1.md")
    assert parse_arguments("json", "s1", WS, HOME)[1] == HOME / "exports" / "hermes-session-s1.json"


def test_a_named_format_and_a_path():
    assert parse_arguments("json out/x.json", "s1", WS, HOME) == ("json", WS / "out/x.json")
    assert parse_arguments("JSON", "s1", WS, HOME)[0] == "json"


def test_the_path_suffix_picks_the_format():
    assert parse_arguments("notes.json", "s1", WS, HOME) == ("json", WS / "notes.json")
    assert parse_arguments("notes.txt", "s1", WS, HOME) == ("md", WS / "notes.txt")


@pytest.mark.parametrize("word", ["pdf", "html", "txt"])
def test_an_unknown_format_is_refused_not_written_as_a_file_named_after_it(word):
    with pytest.raises(ExportError, match="use md or json"):
        parse_arguments(word, "s1", WS, HOME)
