"""The first snapshot of a large workspace, hashed in slices by several git processes (X2).

Whatever way it is taken, a snapshot is the same tree; the joined index tells later
snapshots what changed exactly as git's own would; anything odd falls back to `git add`.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from agent.checkpoints import shadow
from agent.checkpoints.gitindex import IndexFormatError, join_indexes
from agent.checkpoints.shadow import ShadowRepo, git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


def _workspace(root: Path, files: int = 40) -> Path:
    root.mkdir()
    (root / ".gitignore").write_text("*.log\n")
    for number in range(files):
        folder = root / f"d{number % 4}" / ("deep" if number % 3 else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f {number}é.txt").write_text(f"file {number}\n")
    (root / "ignored.log").write_text("not in a snapshot\n")
    (root / "link").symlink_to("d0/f 0é.txt")
    (root / "big.bin").write_bytes(b"x" * 5000)
    return root


def _sliced(monkeypatch, size: int = 5) -> None:
    monkeypatch.setattr(shadow, "SLICE_FILES", size)


def _tree_listing(repo: ShadowRepo, tree: str) -> bytes:
    return repo._git("ls-tree", "-r", "-z", "--full-tree", tree)


def test_a_first_snapshot_in_slices_is_the_tree_one_git_add_makes(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    whole = ShadowRepo(ws, tmp_path / "whole", max_file_bytes=4096)
    tree_whole, skipped_whole = whole.snapshot()
    assert not list((tmp_path / "whole").glob("*/hermes-index.part*"))

    _sliced(monkeypatch)
    calls = []
    monkeypatch.setattr(ShadowRepo, "_start", _counting(ShadowRepo._start, calls))
    sliced = ShadowRepo(ws, tmp_path / "sliced", max_file_bytes=4096)
    tree_sliced, skipped_sliced = sliced.snapshot()

    assert len(calls) == shadow.MAX_SLICES  # 43 files in slices of 5, at most 8 of them
    assert tree_sliced == tree_whole
    assert skipped_sliced == skipped_whole == ["big.bin"]
    assert b"ignored.log" not in _tree_listing(sliced, tree_sliced)
    assert not list((tmp_path / "sliced").glob("*/hermes-index.part*"))
    # The joined index holds what git's own holds: the same paths, modes and objects.
    assert sliced._git("ls-files", "-s", "-z") == whole._git("ls-files", "-s", "-z")


def test_files_written_the_second_they_are_hashed_are_read_again(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    _sliced(monkeypatch)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    now = time.time_ns() + 5 * 10**9  # "now" for git's look at the times: racy every one
    for path in ws.rglob("*.txt"):
        os.utime(path, ns=(now, now))
    tree, _ = repo.snapshot()
    assert "size: 0\t" in repo._git("ls-files", "--debug").decode()  # smudged
    (ws / "d0" / "f 0é.txt").write_text("file 9\n")  # same size, the same second
    os.utime(ws / "d0" / "f 0é.txt", ns=(now, now))
    second, _ = repo.snapshot()
    assert [c.path for c in repo.changes(tree, second)] == ["d0/f 0é.txt"]
    # The next snapshot read them again: no later one has to.
    assert "size: 0\t" not in repo._git("ls-files", "--debug").decode()
    assert repo.snapshot()[0] == second


def _counting(start, calls):
    def counted(self, command, paths, index):
        calls.append(list(paths))
        return start(self, command, paths, index)

    return counted


def test_after_a_sliced_first_snapshot_the_next_one_sees_every_change(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    _sliced(monkeypatch)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    first, _ = repo.snapshot()
    assert repo.snapshot()[0] == first  # nothing changed: the same tree
    assert repo._changed() == {}  # the joined index's stat data is right: nothing to re-read

    (ws / "d1" / "deep" / "f 1é.txt").write_text("changed\n")
    (ws / "d2" / "f 6é.txt").unlink()
    (ws / "new.txt").write_text("new\n")
    second, _ = repo.snapshot()
    paths = {(c.path, c.added, c.deleted) for c in repo.changes(first, second)}
    assert paths == {
        ("d1/deep/f 1é.txt", False, False),
        ("d2/f 6é.txt", False, True),
        ("new.txt", True, False),
    }


def test_a_file_that_vanishes_mid_snapshot_falls_back_to_git_add(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    _sliced(monkeypatch)
    over_cap = ShadowRepo._over_cap
    gone = ws / "d3" / "deep" / "f 7é.txt"

    def vanishing(self, rel, root):
        if rel == "d3/deep/f 7é.txt":
            gone.unlink(missing_ok=True)  # listed by ls-files, gone before update-index reads it
        return over_cap(self, rel, root)

    monkeypatch.setattr(ShadowRepo, "_over_cap", vanishing)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    tree, _ = repo.snapshot()
    listing = _tree_listing(repo, tree)
    assert b"d3/deep/f 7\xc3\xa9.txt" not in listing and b"d3/f 3\xc3\xa9.txt" in listing
    assert not list((tmp_path / "shadow").glob("*/hermes-index.part*"))
    assert repo.snapshot()[0] == tree


def test_a_nested_repository_is_left_to_git_add(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    nested = ws / "vendor"
    nested.mkdir()
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    _sliced(monkeypatch)
    calls = []
    monkeypatch.setattr(ShadowRepo, "_start", _counting(ShadowRepo._start, calls))
    repo = ShadowRepo(ws, tmp_path / "shadow")
    tree, _ = repo.snapshot()
    assert calls == []
    assert b"d0/f 0\xc3\xa9.txt" in _tree_listing(repo, tree)


def test_an_entry_as_new_as_its_index_is_read_again_after_the_join(tmp_path):
    """A file changed in the instant git hashed it ("racily clean") keeps being re-read."""
    ws = tmp_path / "ws"
    ws.mkdir()
    file = ws / "a.txt"
    file.write_text("aaaa\n")
    git_dir = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ws)}
    part = tmp_path / "part"
    subprocess.run(
        ["git", "update-index", "--add", "a.txt"],
        cwd=ws,
        env={**env, "GIT_INDEX_FILE": str(part)},
        check=True,
    )
    second = 1_700_000_000 * 10**9
    stamp = second + 200_000_000
    os.utime(file, ns=(stamp, stamp))
    subprocess.run(  # the stat data git records is the file's as it is now
        ["git", "update-index", "--refresh"],
        cwd=ws,
        env={**env, "GIT_INDEX_FILE": str(part)},
        check=True,
    )
    os.utime(part, ns=(second + 900_000_000,) * 2)  # the index written in the same second
    joined = tmp_path / "joined"
    assert join_indexes([part], joined).smudged == [b"a.txt"]

    file.write_text("bbbb\n")  # same size, and the same time on the clock
    os.utime(file, ns=(stamp, stamp))
    # A change within the same clock tick keeps ctime too; no test can set ctime, so git is
    # told not to look at it.
    modified = subprocess.run(
        ["git", "-c", "core.trustctime=false", "ls-files", "-m"],
        cwd=ws,
        env={**env, "GIT_INDEX_FILE": str(joined)},
        capture_output=True,
        check=True,
    )
    assert modified.stdout == b"a.txt\n"


def test_indexes_out_of_order_or_not_version_2_are_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a", "b"):
        (ws / name).write_text(name)
    git_dir = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ws)}
    parts = []
    for name in ("a", "b"):
        part = tmp_path / f"part-{name}"
        subprocess.run(
            ["git", "update-index", "--add", name],
            cwd=ws,
            env={**env, "GIT_INDEX_FILE": str(part)},
            check=True,
        )
        parts.append(part)
    target = tmp_path / "joined"
    with pytest.raises(IndexFormatError):
        join_indexes(parts[::-1], target)
    assert not target.exists()
    version4 = tmp_path / "part-v4"
    subprocess.run(
        ["git", "update-index", "--add", "--index-version", "4", "a"],
        cwd=ws,
        env={**env, "GIT_INDEX_FILE": str(version4)},
        check=True,
    )
    with pytest.raises(IndexFormatError):
        join_indexes([version4], target)
    assert [path for path, _, _ in join_indexes(parts, target).files] == [b"a", b"b"]


def test_shared_indexes_do_not_pile_up(tmp_path, monkeypatch):
    ws = _workspace(tmp_path / "ws")
    repo = ShadowRepo(ws, tmp_path / "shadow")
    for round_ in range(12):
        for number in range(round_ * 4, round_ * 4 + 4):
            (ws / f"grow{number}.txt").write_text(str(number))
        repo.snapshot()
    assert len(list(repo.git_dir.glob("sharedindex.*"))) <= 2
    assert not list(repo.git_dir.glob("objects/pack/*.pack"))  # few files stay loose objects


def test_trees_written_by_us_are_gits_own_and_the_pack_is_sound(tmp_path, monkeypatch):
    """git orders a folder as if its name ended in a slash: `a-b`, `a.b`, `a/`, `a0`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    names = ["a-b", "a.b", "a/b", "a/c/d", "a0", "b", "é/x", "a/c.txt", "run.sh", "z z/ü"]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(name)
    (ws / "run.sh").chmod(0o755)
    (ws / "to-a").symlink_to("a")
    whole_tree, _ = ShadowRepo(ws, tmp_path / "whole").snapshot()
    monkeypatch.setattr(shadow, "SLICE_FILES", 2)
    repo = ShadowRepo(ws, tmp_path / "sliced")
    assert repo.snapshot()[0] == whole_tree
    fsck = subprocess.run(
        ["git", "fsck", "--no-dangling", "--strict"],
        env={"PATH": os.environ["PATH"], "GIT_DIR": str(repo.git_dir)},
        capture_output=True,
    )
    assert fsck.returncode == 0, fsck.stderr
    loose = [
        folder.name + file.name
        for folder in (repo.git_dir / "objects").iterdir()
        if len(folder.name) == 2
        for file in folder.iterdir()
    ]
    kinds = {repo._git("cat-file", "-t", oid).strip() for oid in loose}
    assert kinds <= {b"blob"}  # a link's blob is loose; every tree is in the pack


def test_one_slice_failing_waits_for_the_others_to_finish_cleanly(tmp_path, monkeypatch):
    """A git killed mid-write leaves its lock file and a half-written pack: when one slice
    fails, the others still run to their end before the usual `add` takes over."""
    ws = _workspace(tmp_path / "ws")
    _sliced(monkeypatch)
    started: list[subprocess.Popen] = []
    real_start = ShadowRepo._start

    def start(self, command, paths, index):
        if not started:
            process = subprocess.Popen(["sh", "-c", "exit 1"])  # the first slice fails at once
        elif len(started) == 1:
            # A slow one that holds its lock file while it works, as git does.
            lock = f"{index}.lock"
            script = f"touch '{lock}'; sleep 0.5; rm -f '{lock}'"
            process = subprocess.Popen(["sh", "-c", script])
        else:
            process = real_start(self, command, paths, index)
        started.append(process)
        return process

    monkeypatch.setattr(ShadowRepo, "_start", start)
    repo = ShadowRepo(ws, tmp_path / "shadow")
    tree, _ = repo.snapshot()
    assert [process.returncode for process in started[1:]] == [0] * (len(started) - 1)
    assert not list(repo.git_dir.glob("hermes-index.part*"))
    assert b"d0/f 0\xc3\xa9.txt" in _tree_listing(repo, tree)  # the usual add took over
