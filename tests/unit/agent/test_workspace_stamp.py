"""A small workspace's stamp tells "nothing changed" without git, and nothing else (X2).

A wrong "unchanged" would make a turn's checkpoint an older tree, and /undo put back what
the user had replaced, so every doubt goes to git: these tests make the doubts.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from agent.checkpoints import stamp as stamps
from agent.checkpoints.shadow import ShadowRepo, git_available
from agent.checkpoints.stamp import Stamp, same, take


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("a = 1\n")
    (ws / "README.md").write_text("# readme\n")
    return ws


@pytest.fixture
def later(monkeypatch):
    """Stamps taken a minute from now: what exists already is old enough to trust by its
    times (no test can set a file's ctime back)."""
    import time

    real = time.time_ns
    monkeypatch.setattr(stamps.time, "time_ns", lambda: real() + 60 * 10**9)


def _trusting_times(stamp: Stamp) -> Stamp:
    """The same stamp as if no entry had been too recent (the content not kept)."""
    return Stamp({rel: (*entry[:8], None) for rel, entry in stamp.entries.items()})


def test_an_untouched_workspace_stamps_the_same(tmp_path, later):
    ws = _ws(tmp_path)
    first = take(str(ws))
    assert first is not None and set(first.entries) == {".", "src", "src/a.py", "README.md"}
    assert all(entry[8] is None for entry in first.entries.values())  # old enough to trust
    assert same(first, take(str(ws)), str(ws))


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: (ws / "src" / "a.py").write_text("a = 2\n"),
        lambda ws: (ws / "src" / "new.py").write_text(""),
        lambda ws: (ws / "README.md").unlink(),
        lambda ws: (ws / "src" / "a.py").chmod(0o755),
        lambda ws: (ws / "src" / "a.py").rename(ws / "src" / "b.py"),
        lambda ws: (ws / "empty").mkdir(),
        lambda ws: os.replace(_written(ws / "tmp", "a = 1\n"), ws / "src" / "a.py"),
    ],
    ids=["write", "create", "delete", "chmod", "rename", "mkdir", "replace same bytes"],
)
def test_any_change_stamps_differently(tmp_path, change, later):
    ws = _ws(tmp_path)
    before = take(str(ws))
    change(ws)
    now = take(str(ws))
    assert now is None or not same(before, now, str(ws))


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_file_written_just_now_is_compared_by_its_content(tmp_path):
    """Changed again within the clock tick of the stamp, it keeps its times and size: only
    its bytes tell (the stamp kept its hash because its times were that recent)."""
    ws = _ws(tmp_path)
    before = take(str(ws))  # written a moment ago: every entry too recent to trust
    assert before.entries["src/a.py"][8] is not None
    (ws / "src" / "a.py").write_text("a = 9\n")  # the same size
    now = _trusting_times(Stamp({**take(str(ws)).entries}))
    faked = Stamp({**now.entries, "src/a.py": (*before.entries["src/a.py"][:8], None)})
    assert not same(before, faked, str(ws))
    (ws / "src" / "a.py").write_text("a = 1\n")
    assert same(before, faked, str(ws))


def test_a_folder_changed_just_now_is_compared_by_its_listing(tmp_path):
    ws = _ws(tmp_path)
    before = take(str(ws))
    (ws / "src" / "b.py").write_text("")
    (ws / "src" / "a.py").unlink()  # the same number of entries, other names
    now = take(str(ws))
    faked = Stamp(
        {
            **{rel: before.entries[rel] for rel in before.entries},
            "src": (*before.entries["src"][:8], None),
        }
    )
    assert now is not None and not same(before, faked, str(ws))


def test_the_workspaces_own_git_is_not_walked_but_a_nested_one_is(tmp_path, later):
    ws = _ws(tmp_path)
    (ws / ".git").mkdir()
    (ws / "vendor" / ".git").mkdir(parents=True)
    before = take(str(ws))
    assert ".git" not in before.entries and "vendor/.git" in before.entries
    (ws / ".git" / "index").write_text("the user's git at work")
    assert same(before, take(str(ws)), str(ws))
    (ws / "vendor" / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
    assert not same(before, take(str(ws)), str(ws))


def test_no_stamp_for_a_large_workspace_a_link_or_a_large_recent_file(tmp_path, monkeypatch):
    ws = _ws(tmp_path)
    monkeypatch.setattr(stamps, "STAMP_ENTRIES", 3)
    assert take(str(ws)) is None
    monkeypatch.setattr(stamps, "STAMP_ENTRIES", 1000)
    (ws / "link").symlink_to("README.md")
    assert take(str(ws)) is None
    (ws / "link").unlink()
    (ws / "big.bin").write_bytes(b"x" * (stamps.HASH_BYTES + 1))
    assert take(str(ws)) is None
    real = stamps.time.time_ns
    monkeypatch.setattr(stamps.time, "time_ns", lambda: real() + 60 * 10**9)
    assert take(str(ws)) is not None  # old enough: its times are trusted, nothing hashed


def test_skipped_folders_are_not_walked(tmp_path, later):
    ws = _ws(tmp_path)
    (ws / "home" / "state").mkdir(parents=True)
    before = take(str(ws), ["home"])
    (ws / "home" / "state" / "db").write_text("busy")
    assert "home" not in before.entries and same(before, take(str(ws), ["home"]), str(ws))


pytestmark_git = pytest.mark.skipif(not git_available(), reason="checkpoints need git")


@pytestmark_git
def test_an_unchanged_workspace_is_snapshotted_without_git(tmp_path, monkeypatch):
    ws = _ws(tmp_path)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    tree, _ = repo.snapshot()
    assert repo.unchanged_tree("before a turn") == tree
    calls = []
    real = ShadowRepo._git
    monkeypatch.setattr(
        ShadowRepo, "_git", lambda self, *a, **k: calls.append(a) or real(self, *a, **k)
    )
    assert repo.snapshot()[0] == tree and calls == []
    (ws / "src" / "a.py").write_text("a = 2\n")
    walks = []
    real_take = stamps.take
    monkeypatch.setattr(stamps, "take", lambda *a: walks.append(a) or real_take(*a))
    assert repo.unchanged_tree("before a turn") is None
    changed, _ = repo.snapshot()
    assert changed != tree and calls
    assert len(walks) == 1  # the snapshot kept the quick look's stamp: one walk, not two
    assert [c.path for c in repo.changes(tree, changed)] == ["src/a.py"]


@pytestmark_git
def test_the_quick_look_never_waits_for_a_snapshot_being_taken(tmp_path):
    ws = _ws(tmp_path)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    repo.snapshot()
    held, release = threading.Event(), threading.Event()

    def hold():
        with repo._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        assert repo.unchanged_tree("before a turn") is None
    finally:
        release.set()
        holder.join(10)


def test_a_fifo_put_where_a_file_was_never_blocks_the_look(tmp_path, monkeypatch):
    """Between the stat and the read, a FIFO takes a recent file's place: no stamp, at once
    (a plain open would wait for a writer forever, and the agent's thread with it)."""
    ws = _ws(tmp_path)
    real_lstat = os.lstat
    swapped = []

    def swapping(path, *args, **kwargs):
        found = real_lstat(path, *args, **kwargs)
        if str(path).endswith("a.py") and not swapped:
            swapped.append(path)
            os.unlink(path)
            os.mkfifo(path)
        return found

    monkeypatch.setattr(stamps.os, "lstat", swapping)
    taken: list = []
    # In a thread of its own: a regression blocks in open() forever, and fails here, at once.
    looker = threading.Thread(target=lambda: taken.append(take(str(ws))), daemon=True)
    looker.start()
    looker.join(10)
    assert taken == [None], "the look blocked on the FIFO"
