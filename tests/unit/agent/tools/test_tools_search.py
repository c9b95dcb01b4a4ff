"""glob and grep on a real tree."""

from __future__ import annotations

import pytest

from agent.tools import ToolContext
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
