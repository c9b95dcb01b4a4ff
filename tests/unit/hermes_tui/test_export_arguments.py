"""/export's arguments: a format, a path, or both; an unknown format is refused (X2)."""

from pathlib import Path

import pytest

from hermes_tui.export import ExportError, parse_arguments

WS = Path("/ws")


def test_no_argument_writes_markdown_in_the_workspace():
    assert parse_arguments("", "s1", WS) == ("md", WS / "hermes-session-s1.md")


def test_a_named_format_and_a_path():
    assert parse_arguments("json out/x.json", "s1", WS) == ("json", WS / "out/x.json")
    assert parse_arguments("JSON", "s1", WS) == ("json", WS / "hermes-session-s1.json")


def test_the_path_suffix_picks_the_format():
    assert parse_arguments("notes.json", "s1", WS) == ("json", WS / "notes.json")
    assert parse_arguments("notes.txt", "s1", WS) == ("md", WS / "notes.txt")


@pytest.mark.parametrize("word", ["pdf", "html", "txt"])
def test_an_unknown_format_is_refused_not_written_as_a_file_named_after_it(word):
    with pytest.raises(ExportError, match="use md or json"):
        parse_arguments(word, "s1", WS)
