"""agent/gitlist.py lists a work tree as plain `git ls-files` would, never reading its
config (H8, P2): worktrees, submodules, split and sha256 indexes, the user's excludes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent import gitsafe
from agent.gitlist import config_value, list_files, user_excludes_file

pytestmark = pytest.mark.skipif(not gitsafe.available(), reason="needs the git binary")


def _git(cwd: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"})
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always",
         *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30,
    )  # fmt: skip


def _plain(cwd: Path) -> list[str]:
    """What today's plain `git ls-files` says, with the same user excludes."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=cwd, capture_output=True, check=True, timeout=30,
    )  # fmt: skip
    return [p for p in done.stdout.decode().split("\0") if p]


def _repo(root: Path, *init: str) -> Path:
    root.mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("a\n")
    (root / "notes.log").write_text("ignored\n")
    (root / ".gitignore").write_text("*.log\n")
    _git(root, "init", "-q", *init)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one")
    (root / "new.txt").write_text("untracked\n")
    (root / "private.txt").write_text("excluded\n")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("private.txt\n")
    return root


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A user whose ~/.gitconfig names an excludes file (read as data)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[core]\n\texcludesFile = "~/my ignores"  # mine\n')
    (home / "my ignores").write_text("*.bak\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    return home


def test_a_repository_and_a_subfolder_match_plain_git(tmp_path, home):
    root = _repo(tmp_path / "repo")
    (root / "old.bak").write_text("the user's excludes leave this out\n")
    assert user_excludes_file() == home / "my ignores"
    assert sorted(list_files(root) or []) == [".gitignore", "new.txt", "src/a.py"]
    assert list_files(root) == _plain(root)
    assert list_files(root / "src") == ["a.py"] == _plain(root / "src")


@pytest.mark.parametrize("kind", ["worktree", "submodule", "split index", "sha256", "index v4"])
def test_odd_repositories_match_plain_git(kind, tmp_path, home):
    if kind == "worktree":
        _git(_repo(tmp_path / "repo"), "worktree", "add", "-q", str(tmp_path / "linked"))
        (tmp_path / "linked" / "only-here.txt").write_text("x\n")
        where = tmp_path / "linked"
    elif kind == "submodule":
        inner = _repo(tmp_path / "inner")
        outer = _repo(tmp_path / "outer")
        _git(outer, "submodule", "add", "-q", str(inner), "mod")
        (outer / "mod" / "fresh.txt").write_text("x\n")
        where = outer / "mod"
    elif kind == "split index":
        where = _repo(tmp_path / "repo")
        _git(where, "-c", "core.splitIndex=true", "update-index", "--split-index")
        (where / "b.py").write_text("b\n")
        _git(where, "-c", "core.splitIndex=true", "add", "b.py")
        assert any(p.name.startswith("sharedindex.") for p in (where / ".git").iterdir())
    elif kind == "sha256":
        where = _repo(tmp_path / "repo", "--object-format=sha256")
    else:
        where = _repo(tmp_path / "repo")
        _git(where, "update-index", "--index-version", "4")
    listed = list_files(where)
    assert listed is not None and listed == _plain(where)


def test_what_git_cannot_read_is_none_for_the_walk(tmp_path, home):
    root = _repo(tmp_path / "repo")
    (root / ".git" / "index").write_bytes(b"DIRC not really an index")
    assert list_files(root) is None
    (tmp_path / "bare" / ".git").mkdir(parents=True)  # no HEAD: no repository
    assert list_files(tmp_path / "bare") is None
    assert list_files(tmp_path / "nothing") is None


def test_config_values_are_read_as_data(tmp_path):
    config = tmp_path / "config"
    config.write_text(
        "[core]\n\tbare = false\n[extensions] objectFormat = sha256 ; comment\n"
        '[remote "a b"]\n\turl = "x\\"y" # c\n[include]\n\tpath = elsewhere\n[core]\n\tbare\n'
    )
    assert config_value(config, "extensions", "objectformat") == "sha256"
    assert config_value(config, 'remote"a b', "url") == 'x"y'
    assert config_value(config, "core", "bare") == "true"  # the last one, a bare key
    assert config_value(config, "core", "fsmonitor") is None
    assert config_value(tmp_path / "missing", "core", "bare") is None
