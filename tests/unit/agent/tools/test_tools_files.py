"""File tools on real files: read_file, write_file, edit_file, list_dir, and confinement."""

from __future__ import annotations

import pytest

from agent.tools import ToolContext

# ---------------------------------------------------------------- confinement

ESCAPES = ["outside_abs", "../outside/secret.txt", "link_out/secret.txt", "file_link"]


def _escape_path(ws, kind):
    outside = ws.parent / "outside"
    if kind == "outside_abs":
        return str(outside / "secret.txt")
    if kind == "link_out/secret.txt":
        (ws / "link_out").symlink_to(outside, target_is_directory=True)
    if kind == "file_link":
        (ws / "file_link").symlink_to(outside / "secret.txt")
    return kind


@pytest.mark.parametrize("kind", ESCAPES)
@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("read_file", {}),
        ("write_file", {"content": "pwned"}),
        ("edit_file", {"old_string": "top", "new_string": "pwned"}),
        ("list_dir", {}),
        ("glob", {"pattern": "*"}),
        ("grep", {"pattern": "secret"}),
    ],
)
def test_every_path_tool_refuses_escapes(reg, ws, name, extra, kind):
    """A4: every file tool refuses a path outside the workspace."""
    raw = _escape_path(ws, kind)
    if name in ("list_dir", "glob", "grep") and kind in ("outside_abs", "file_link"):
        raw = str(ws.parent / "outside") if kind == "outside_abs" else raw
    ctx = ToolContext(ws, approval_mode="yolo")
    result = reg.run(name, {"path": raw, **extra}, ctx)
    assert not result.ok
    assert result.output == f"Refused: {raw} is outside the workspace {ws}."
    assert (ws.parent / "outside" / "secret.txt").read_text() == "top secret\n"


def test_symlink_inside_workspace_is_fine(reg, ws, yolo):
    (ws / "real.txt").write_text("hi\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert reg.run("read_file", {"path": "alias.txt"}, yolo).output == "     1\thi"


def test_absolute_path_inside_workspace(reg, ws, yolo):
    (ws / "a.txt").write_text("x\n")
    assert reg.run("read_file", {"path": str(ws / "a.txt")}, yolo).ok


def test_dotdot_that_stays_inside(reg, ws, yolo):
    (ws / "sub").mkdir()
    (ws / "a.txt").write_text("x\n")
    assert reg.run("read_file", {"path": "sub/../a.txt"}, yolo).ok


# ---------------------------------------------------------------- read_file


def test_read_numbered_lines(reg, ws, yolo):
    (ws / "a.py").write_text("import os\n\nprint(os)\n")
    result = reg.run("read_file", {"path": "a.py"}, yolo)
    assert result.ok
    assert result.output == "     1\timport os\n     2\t\n     3\tprint(os)"


def test_read_offset_limit_and_truncation_note(reg, ws, yolo):
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = reg.run("read_file", {"path": "n.txt", "offset": 3, "limit": 2}, yolo)
    lines = result.output.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "showing lines 3-4 of 10" in lines[2] and "offset=5" in lines[2]
    tail = reg.run("read_file", {"path": "n.txt", "offset": 9}, yolo)
    assert tail.output == "     9\tline 9\n    10\tline 10"


def test_read_respects_output_cap_by_lines(reg, ws):
    (ws / "big.txt").write_text("".join(f"{i:04d} " + "x" * 95 + "\n" for i in range(1, 2001)))
    ctx = ToolContext(ws, approval_mode="yolo", output_cap=5000)
    result = reg.run("read_file", {"path": "big.txt"}, ctx)
    assert result.ok
    assert len(result.output) <= 5000
    assert "of 2000; use offset=" in result.output
    assert "characters omitted" not in result.output


def test_read_errors(reg, ws, yolo):
    (ws / "d").mkdir()
    (ws / "bin.dat").write_bytes(b"\x89PNG\r\n\x00\x00\x01")
    (ws / "short.txt").write_text("a\nb\n")
    (ws / "empty.txt").write_text("")
    cases = {
        "missing.txt": "File not found: missing.txt.",
        "d": "is a directory",
        "bin.dat": "binary file",
    }
    for path, fragment in cases.items():
        result = reg.run("read_file", {"path": path}, yolo)
        assert not result.ok and fragment in result.output, (path, result)
    result = reg.run("read_file", {"path": "short.txt", "offset": 5}, yolo)
    assert not result.ok and "past the end" in result.output and "2 lines" in result.output
    result = reg.run("read_file", {"path": "short.txt", "offset": 0}, yolo)
    assert not result.ok
    result = reg.run("read_file", {"path": "short.txt", "limit": 0}, yolo)
    assert not result.ok
    assert reg.run("read_file", {"path": "empty.txt"}, yolo).output == "(empty.txt is empty)"


def test_read_non_utf8_text_is_replaced_not_fatal(reg, ws, yolo):
    (ws / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = reg.run("read_file", {"path": "latin.txt"}, yolo)
    assert result.ok and "caf" in result.output


# ---------------------------------------------------------------- write_file


def test_write_creates_parents_and_reports_bytes(reg, ws, yolo):
    result = reg.run("write_file", {"path": "deep/er/f.txt", "content": "héllo\n"}, yolo)
    assert result.ok
    assert "7 bytes" in result.output and "Created" in result.output
    assert (ws / "deep/er/f.txt").read_text(encoding="utf-8") == "héllo\n"
    again = reg.run("write_file", {"path": "deep/er/f.txt", "content": ""}, yolo)
    assert again.ok and "Overwrote" in again.output and "0 bytes" in again.output


def test_write_keeps_line_endings(reg, ws, yolo):
    assert reg.run("write_file", {"path": "crlf.txt", "content": "a\r\nb\r\n"}, yolo).ok
    assert (ws / "crlf.txt").read_bytes() == b"a\r\nb\r\n"


def test_write_to_directory_is_an_error(reg, ws, yolo):
    (ws / "d").mkdir()
    for path in ("d", "."):
        result = reg.run("write_file", {"path": path, "content": "x"}, yolo)
        assert not result.ok and "directory" in result.output


def test_write_diff_for_new_file(reg, ws):
    seen = []
    ctx = ToolContext(ws, approve=lambda req: seen.append(req) or True)
    assert reg.run("write_file", {"path": "new.txt", "content": "a\nb"}, ctx).ok
    [req] = seen
    assert "+++ b/new.txt" in req.detail and "+a" in req.detail and "+b" in req.detail


def test_write_diff_is_capped(reg, ws):
    seen = []
    ctx = ToolContext(ws, approve=lambda req: seen.append(req) or True)
    content = "".join(f"line {i}\n" for i in range(20_000))
    assert reg.run("write_file", {"path": "huge.txt", "content": content}, ctx).ok
    assert len(seen[0].detail) < 25_000
    assert "diff truncated" in seen[0].detail
    assert (ws / "huge.txt").read_text() == content


# ---------------------------------------------------------------- edit_file


def test_edit_exact_replace(reg, ws, yolo):
    (ws / "a.py").write_text("def f():\n    return 1\n")
    result = reg.run(
        "edit_file",
        {"path": "a.py", "old_string": "    return 1", "new_string": "    return 2"},
        yolo,
    )
    assert result.ok and "replaced 1 occurrence" in result.output
    assert (ws / "a.py").read_text() == "def f():\n    return 2\n"


def test_edit_not_found_and_ambiguous(reg, ws, yolo):
    (ws / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    result = reg.run("edit_file", {"path": "a.txt", "old_string": "y", "new_string": "z"}, yolo)
    assert not result.ok and "not found" in result.output
    result = reg.run(
        "edit_file", {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}, yolo
    )
    assert not result.ok and "3 times" in result.output and "replace_all" in result.output
    assert (ws / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"
    result = reg.run(
        "edit_file",
        {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True},
        yolo,
    )
    assert result.ok and "replaced 3 occurrences" in result.output
    assert (ws / "a.txt").read_text() == "x = 2\nx = 2\nx = 2\n"


def test_edit_other_errors(reg, ws, yolo):
    (ws / "a.txt").write_text("abc\n")
    (ws / "bin").write_bytes(b"ab\x00c")
    (ws / "d").mkdir()
    cases = [
        ({"path": "a.txt", "old_string": "", "new_string": "x"}, "old_string is empty"),
        ({"path": "a.txt", "old_string": "abc", "new_string": "abc"}, "identical"),
        ({"path": "nope.txt", "old_string": "a", "new_string": "b"}, "File not found"),
        ({"path": "d", "old_string": "a", "new_string": "b"}, "is a directory"),
        ({"path": "bin", "old_string": "ab", "new_string": "b"}, "binary"),
    ]
    for args, fragment in cases:
        result = reg.run("edit_file", args, yolo)
        assert not result.ok and fragment in result.output, (args, result)
    assert (ws / "a.txt").read_text() == "abc\n"


def test_edit_preserves_crlf(reg, ws, yolo):
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    assert reg.run("edit_file", {"path": "w.txt", "old_string": "two", "new_string": "2"}, yolo).ok
    assert (ws / "w.txt").read_bytes() == b"one\r\n2\r\n"


def test_edit_refuses_if_file_changed_during_approval(reg, ws):
    target = ws / "a.txt"
    target.write_text("old\n")

    def approve(req):
        target.write_text("someone else wrote old\n")
        return True

    ctx = ToolContext(ws, approve=approve)
    result = reg.run("edit_file", {"path": "a.txt", "old_string": "old", "new_string": "new"}, ctx)
    assert not result.ok and "changed" in result.output
    assert target.read_text() == "someone else wrote old\n"


# ---------------------------------------------------------------- list_dir


def test_list_dir_sorted_dirs_marked_git_skipped(reg, ws, yolo):
    for d in ("src", ".git", "Docs"):
        (ws / d).mkdir()
    for f in ("b.txt", "a.txt", ".env"):
        (ws / f).write_text("")
    (ws / "src" / "m.py").write_text("")
    result = reg.run("list_dir", {}, yolo)
    assert result.ok
    assert result.output.splitlines() == [".env", "a.txt", "b.txt", "Docs/", "src/"]
    assert reg.run("list_dir", {"path": "src"}, yolo).output == "m.py"
    assert reg.run("list_dir", {"path": ""}, yolo).ok


def test_list_dir_errors_and_empty(reg, ws, yolo):
    (ws / "f.txt").write_text("")
    (ws / "empty").mkdir()
    assert "not found" in reg.run("list_dir", {"path": "nope"}, yolo).output
    result = reg.run("list_dir", {"path": "f.txt"}, yolo)
    assert not result.ok and "not a directory" in result.output
    assert reg.run("list_dir", {"path": "empty"}, yolo).output == "(empty is empty)"


def test_list_dir_caps_entries(reg, ws, yolo):
    for i in range(1005):
        (ws / f"f{i:04d}").touch()
    result = reg.run("list_dir", {}, yolo)
    lines = result.output.splitlines()
    assert len(lines) == 1001
    assert "5 more entries" in lines[-1]
