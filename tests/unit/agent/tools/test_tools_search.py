"""glob and grep on a real tree."""

from __future__ import annotations

import threading

import pytest

from agent.tools import ToolContext, search
from agent.tools.search import glob_to_regex


@pytest.fixture
def tree(ws):
    """A small project tree with noise directories and a binary file."""
    files = {
        "README.md": "Hello project\n",
        "src/app.py": "import os\n\ndef main():\n    return 'TODO: hello'\n",
        "src/util/helpers.py": "def helper():\n    pass  # todo later\n",
        "src/util/data.json": '{"hello": 1}\n',
        "tests/test_app.py": "def test_main():\n    assert True\n",
        ".git/config": "hello from git\n",
        "node_modules/pkg/index.js": "hello from node\n",
        ".venv/lib/site.py": "hello from venv\n",
        "src/__pycache__/app.cpython-311.pyc": "hello pyc\n",
    }
    for rel, text in files.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ws / "src" / "logo.bin").write_bytes(b"hello\x00\x01\x02")
    return ws


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("a/b.py", "a/b.py", True),
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/a.py", False),
        ("src/**", "src/x/y", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("file[.txt", "file[.txt", True),
    ],
)
def test_glob_to_regex(pattern, path, matches):
    assert bool(glob_to_regex(pattern).match(path)) is matches


def test_glob_recursive_sorted_relative(reg, tree, yolo):
    result = reg.run("glob", {"pattern": "**/*.py"}, yolo)
    assert result.ok
    assert result.output.splitlines() == [
        "src/app.py",
        "src/util/helpers.py",
        "tests/test_app.py",
    ]


def test_glob_top_level_and_dirs(reg, tree, yolo):
    assert reg.run("glob", {"pattern": "*.md"}, yolo).output == "README.md"
    assert reg.run("glob", {"pattern": "src/*"}, yolo).output.splitlines() == [
        "src/app.py",
        "src/logo.bin",
        "src/util/",
    ]


def test_glob_with_base_path(reg, tree, yolo):
    result = reg.run("glob", {"pattern": "*.py", "path": "src/util"}, yolo)
    assert result.output == "src/util/helpers.py"


def test_glob_skips_noise_unless_named(reg, tree, yolo):
    everything = reg.run("glob", {"pattern": "**/*"}, yolo).output
    for noise in (".git", "node_modules", ".venv", "__pycache__"):
        assert noise not in everything
    named = reg.run("glob", {"pattern": "node_modules/**/*.js"}, yolo)
    assert named.output == "node_modules/pkg/index.js"


def test_glob_no_match_and_errors(reg, tree, yolo):
    result = reg.run("glob", {"pattern": "**/*.rs"}, yolo)
    assert result.ok and "No paths match" in result.output
    for pattern in ("/etc/*", "../outside/*", ""):
        result = reg.run("glob", {"pattern": pattern}, yolo)
        assert not result.ok, pattern
    assert "not found" in reg.run("glob", {"pattern": "*", "path": "nope"}, yolo).output
    assert not reg.run("glob", {"pattern": "*", "path": "README.md"}, yolo).ok


def test_glob_cap(reg, ws, yolo):
    for i in range(510):
        (ws / f"f{i:03d}.txt").touch()
    lines = reg.run("glob", {"pattern": "*.txt"}, yolo).output.splitlines()
    assert len(lines) == 501
    assert "10 more matches" in lines[-1]


def test_glob_does_not_follow_links_out(reg, ws, yolo):
    (ws / "out").symlink_to(ws.parent / "outside", target_is_directory=True)
    assert "secret" not in reg.run("glob", {"pattern": "**/*.txt"}, yolo).output


def test_grep_basic_format(reg, tree, yolo):
    result = reg.run("grep", {"pattern": "hello"}, yolo)
    assert result.ok
    assert result.output.splitlines() == [
        "src/app.py:4:     return 'TODO: hello'",
        'src/util/data.json:1: {"hello": 1}',
    ]


def test_grep_ignore_case_and_skips(reg, tree, yolo):
    out = reg.run("grep", {"pattern": "hello", "ignore_case": True}, yolo).output
    assert "README.md:1: Hello project" in out
    for noise in (".git", "node_modules", ".venv", "__pycache__", "logo.bin"):
        assert noise not in out


def test_grep_glob_filter_and_path(reg, tree, yolo):
    out = reg.run("grep", {"pattern": r"todo", "ignore_case": True, "glob": "*.py"}, yolo)
    assert out.output.splitlines() == [
        "src/app.py:4:     return 'TODO: hello'",
        "src/util/helpers.py:2:     pass  # todo later",
    ]
    out = reg.run("grep", {"pattern": "def", "path": "tests"}, yolo)
    assert out.output == "tests/test_app.py:1: def test_main():"
    out = reg.run("grep", {"pattern": "def", "path": "src/app.py"}, yolo)
    assert out.output == "src/app.py:3: def main():"
    out = reg.run("grep", {"pattern": "def", "glob": "src/util/*.py"}, yolo)
    assert out.output == "src/util/helpers.py:1: def helper():"


def test_grep_regex_and_errors(reg, tree, yolo):
    out = reg.run("grep", {"pattern": r"^def \w+\(\):$"}, yolo).output
    assert "src/app.py:3: def main():" in out
    result = reg.run("grep", {"pattern": "("}, yolo)
    assert not result.ok and "Invalid regular expression" in result.output
    result = reg.run("grep", {"pattern": "zzz_nothing"}, yolo)
    assert result.ok and "No matches" in result.output
    assert not reg.run("grep", {"pattern": "x", "path": "missing"}, yolo).ok
    assert not reg.run("grep", {"pattern": ""}, yolo).ok


def test_grep_cap(reg, ws):
    (ws / "many.txt").write_text("match\n" * 600)
    ctx = ToolContext(ws, approval_mode="yolo")
    lines = reg.run("grep", {"pattern": "match"}, ctx).output.splitlines()
    assert len(lines) == 501
    assert "100 more matches" in lines[-1]


def test_grep_skips_symlinks_out(reg, ws, yolo):
    (ws / "leak.txt").symlink_to(ws.parent / "outside" / "secret.txt")
    (ws / "dirleak").symlink_to(ws.parent / "outside", target_is_directory=True)
    result = reg.run("grep", {"pattern": "secret"}, yolo)
    assert result.ok and "No matches" in result.output


# ---------------------------------------------------------------- RE2 (SPEC H6)


@pytest.mark.parametrize(
    ("pattern", "feature"),
    [
        (r"foo(?=bar)", "lookahead"),
        (r"foo(?!bar)", "lookahead"),
        (r"(?<=x)y", "lookbehind"),
        (r"(?<!x)y", "lookbehind"),
        (r"(a)\1", "backreferences"),
        (r"(?P<q>a)(?P=q)", "backreferences"),
        (r"foo\Z", r"\Z (use $"),
        (r"a*+", "possessive"),
    ],
)
def test_python_only_syntax_is_a_clear_tool_error(reg, tree, yolo, capfd, pattern, feature):
    result = reg.run("grep", {"pattern": pattern}, yolo)
    assert not result.ok
    assert result.output.startswith(f"Unsupported regular expression {pattern!r}")
    assert feature in result.output and "rewrite the pattern" in result.output
    # RE2 logs parse errors to stderr unless told not to: nothing may reach the terminal.
    assert capfd.readouterr().err == ""


def test_re2_keeps_line_semantics(reg, ws, yolo):
    (ws / "a.txt").write_text("first\r\nsecond line\r\n\nlast")
    (ws / "b.txt").write_text("x\n")
    assert reg.run("grep", {"pattern": "^second", "path": "a.txt"}, yolo).output == (
        "a.txt:2: second line"
    )
    assert reg.run("grep", {"pattern": "line$", "path": "a.txt"}, yolo).output == (
        "a.txt:2: second line"
    )
    # An empty line matches ^$; the final newline does not make one more.
    assert reg.run("grep", {"pattern": "^$"}, yolo).output == "a.txt:3: "
    # No match spans lines, whatever the pattern says.
    assert "No matches" in reg.run("grep", {"pattern": r"first\s+second"}, yolo).output
    assert "No matches" in reg.run("grep", {"pattern": "first[^x]*second"}, yolo).output
    out = reg.run("grep", {"pattern": "LAST", "ignore_case": True}, yolo).output
    assert out == "a.txt:4: last"


def test_unicode_lines_and_long_line_display(reg, ws, yolo):
    (ws / "u.txt").write_text("héllo wörld\n" + "é" * 1000 + "needle\n")
    assert reg.run("grep", {"pattern": "wör"}, yolo).output == "u.txt:1: héllo wörld"
    out = reg.run("grep", {"pattern": "needle"}, yolo).output
    assert out == "u.txt:2: " + "é" * 300 + "…"


def test_count_cap_stops_the_search(reg, ws, yolo, monkeypatch):
    monkeypatch.setattr(search, "MAX_GREP_COUNT", 50)
    for i in range(3):
        (ws / f"f{i}.txt").write_text("hit\n" * 40)
    out = reg.run("grep", {"pattern": "hit"}, yolo).output.splitlines()
    assert len(out) == 51
    assert out[-1] == "[... the search stopped at 50 matches; narrow the pattern or path ...]"
    monkeypatch.setattr(search, "MAX_GREP_MATCHES", 10)
    out = reg.run("grep", {"pattern": "hit"}, yolo).output.splitlines()
    assert len(out) == 11
    assert "40 more matches not shown (at least 50 in 2 files)" in out[-1]


def test_time_cap_returns_what_was_found(reg, ws, yolo, monkeypatch):
    monkeypatch.setattr(search, "MAX_GREP_SECONDS", -1.0)
    (ws / "f.txt").write_text("hit\n")
    out = reg.run("grep", {"pattern": "hit"}, yolo).output
    assert "No matches" in out and "the search stopped after -1 s" in out


def test_lines_too_long_for_the_pattern_are_skipped_and_reported(reg, ws, yolo, monkeypatch):
    monkeypatch.setattr(search, "GREP_SLICE_WORK", 20_000)
    (ws / "f.txt").write_text("short hit\n" + "x" * 50_000 + " hit\n" + "another hit\n")
    out = reg.run("grep", {"pattern": r"\bhit\b"}, yolo).output.splitlines()
    assert out[:2] == ["f.txt:1: short hit", "f.txt:3: another hit"]
    assert out[2].startswith("[... 1 line longer than") and "not searched" in out[2]


def test_no_re2_call_gets_more_than_a_slice_of_work(ws):
    class Spy:
        """An RE2 pattern that records the span of every search call."""

        def __init__(self, regex):
            self.regex = regex
            self.programsize = regex.programsize
            self.spans = []

        def search(self, data, pos, end):
            self.spans.append((pos, end))
            return self.regex.search(data, pos, end)

    import re2

    options = search._options(line_by_line=True)
    spy = Spy(re2.compile("(?m)zz+y|q[ab]{100}q", options))  # ~110 instructions
    line = b"ab" * 40 + b"\n"
    data = (line * 99 + b"zzy\n") * 400  # 3.2 MB, a hit every 100 lines
    grep = search._Grep(spy, ToolContext(ws))
    grep.search("f.txt", data)
    assert grep.total == 400
    assert grep.lines[0] == "f.txt:100: zzy"
    assert max((end - pos) * spy.programsize for pos, end in spy.spans) <= search.GREP_SLICE_WORK
    assert spy.spans[-1][1] == len(data) - 1
    assert len({end for _pos, end in spy.spans}) > 5  # the file went in several slices


def test_grep_checks_the_stop_between_files(reg, ws):
    for i in range(20):
        (ws / f"f{i}.txt").write_text("hit\n")
    cancel = threading.Event()
    cancel.set()
    result = reg.run("grep", {"pattern": "hit"}, ToolContext(ws, cancel=cancel))
    assert not result.ok and result.output == "The search was cancelled."


def test_glob_checks_the_stop(reg, tree):
    cancel = threading.Event()
    cancel.set()
    result = reg.run("glob", {"pattern": "**/*"}, ToolContext(tree, cancel=cancel))
    assert not result.ok and result.output == "The search was cancelled."


def test_glob_and_name_filter_are_linear_time(reg, ws, yolo):
    # Python's backtracking re takes seconds on this name; RE2 takes microseconds.
    (ws / ("a" * 60)).write_text("hit\n")
    star_pattern = "*a" * 15 + "*b"
    assert "No paths match" in reg.run("glob", {"pattern": star_pattern}, yolo).output
    assert "No matches" in reg.run("grep", {"pattern": "hit", "glob": star_pattern}, yolo).output
    out = reg.run("grep", {"pattern": "hit", "glob": "a*a"}, yolo).output
    assert out == "a" * 60 + ":1: hit"


def test_bad_glob_class_is_a_tool_error(reg, tree, yolo):
    result = reg.run("glob", {"pattern": "[z-a].py"}, yolo)
    assert not result.ok and result.output.startswith("Invalid glob pattern '[z-a].py'")
