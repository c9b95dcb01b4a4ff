"""`@path` mentions attached to the user's message: contents, caps, refusals (SPEC P2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.attachments import (
    MAX_DIR_ENTRIES,
    MAX_FILE_CHARS,
    NO_SUCH_FILE,
    expand,
    mention_for,
    mentions,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes with space.md").write_text("spaced\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    (tmp_path / "secret.txt").write_text("TOP SECRET OUTSIDE\n")
    return root


def test_mentions_are_found_where_a_path_can_start():
    text = 'see @src/app.py, mail a@b.com, (@docs/) and @"my file.md" @'
    assert [m[0] for m in mentions(text)] == ["src/app.py,", "docs/)", "my file.md"]
    assert mention_for("src/app.py") == "@src/app.py"
    assert mention_for("my file.md") == '@"my file.md"'


def test_a_file_is_attached_with_its_contents_and_described_for_the_chip(ws):
    expansion = expand("look at @src/app.py.", ws)
    assert expansion.content.startswith("look at @src/app.py.\n\n")
    assert '<attached_file path="src/app.py" lines="2">\ndef main():' in expansion.content
    assert expansion.attachments == (
        {"path": "src/app.py", "kind": "file", "lines": 2, "chars": 25, "truncated": False},
    )


def test_a_folder_attaches_its_listing_and_a_quoted_path_works(ws):
    expansion = expand('@src/ and @"notes with space.md"', ws)
    assert '<attached_directory path="src/" entries="1">\napp.py\n' in expansion.content
    assert "spaced" in expansion.content
    kinds = [(a["path"], a["kind"]) for a in expansion.attachments]
    assert kinds == [("src/", "directory"), ("notes with space.md", "file")]


def test_mentions_that_name_nothing_stay_text_and_one_file_attaches_once(ws):
    expansion = expand("@property and @someone; @src/app.py twice: @src/app.py", ws)
    assert [a["path"] for a in expansion.attachments] == ["src/app.py"]
    assert expansion.content.count("<attached_file") == 1
    plain = expand("no mention @nothing-here", ws)
    assert plain.content == "no mention @nothing-here" and plain.attachments == ()


def test_a_file_name_that_names_nothing_is_said_not_silently_dropped(ws):
    """Issue 29 item 10 (P2): `@nosuchfile.py` says that nothing was attached."""
    expansion = expand("look at @nosuchfile.py and @src/gone.ts, @types/node @v2 @x.1", ws)
    assert list(expansion.attachments) == [
        {"path": "nosuchfile.py", "kind": "file", "refused": NO_SUCH_FILE},
        {"path": "src/gone.ts", "kind": "file", "refused": NO_SUCH_FILE},
    ]
    assert expansion.content.count("<not_attached") == 2


def test_binary_and_outside_paths_are_refused_as_the_file_tools_refuse_them(ws):
    os.symlink(ws.parent / "secret.txt", ws / "inside-link.txt")
    text = "@logo.png @../secret.txt @{} @inside-link.txt".format(ws.parent / "secret.txt")
    expansion = expand(text, ws)
    assert "TOP SECRET" not in expansion.content
    refused = {a["path"]: a["refused"] for a in expansion.attachments}
    assert refused == {
        # A name and first bytes of a PNG, and no image behind them (G4).
        "logo.png": "a broken or unreadable PNG image (Truncated File Read)",
        "../secret.txt": "outside the workspace",
        str(ws.parent / "secret.txt"): "outside the workspace",
        "inside-link.txt": "outside the workspace",
    }
    assert expansion.content.count("<not_attached") == 4


def test_caps_cut_a_long_file_and_stop_at_the_message_budget(ws):
    (ws / "big.txt").write_text("line of text\n" * (MAX_FILE_CHARS // 6))
    (ws / "second.txt").write_text("second\n" * 1000)
    cut = expand("@big.txt", ws)
    [info] = cut.attachments
    assert info["truncated"] and info["chars"] <= MAX_FILE_CHARS
    assert "[... cut here: the file is about" in cut.content
    small = expand("@big.txt @second.txt", ws, budget_chars=5000)
    first, second = small.attachments
    assert first["truncated"] and first["chars"] <= 5000
    assert second["refused"] == "over the size cap for one message's attachments"


def test_a_big_folder_lists_its_first_entries(ws):
    many = ws / "many"
    many.mkdir()
    for i in range(MAX_DIR_ENTRIES + 5):
        (many / f"f{i:04}.txt").write_text("")
    expansion = expand("@many", ws)
    assert expansion.attachments[0]["entries"] == MAX_DIR_ENTRIES + 5
    assert "[... 5 more entries]" in expansion.content


def test_attached_text_is_redacted_like_tool_output(ws):
    (ws / ".env").write_text("OPENAI_API_KEY=sk-live-abcdefghijklmnop\n")
    expansion = expand("@.env", ws, redact=lambda s: s.replace("sk-live-abcdefghijklmnop", "[x]"))
    assert "sk-live" not in expansion.content and "[x]" in expansion.content
