"""A hostile workspace against the checkpoints (X2) and the diffs (X1, H1).

Whatever the workspace holds (a `.gitattributes` naming a filter, a `.git/config` with
fsmonitor or filter commands, hooks, a user config that defines the filter, odd names, a
link put where a file was), taking or restoring a checkpoint runs nothing of it, writes
nothing outside the workspace and restores the exact bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import pytest

from agent.checkpoints import shadow
from agent.checkpoints.restore import apply_changes
from agent.checkpoints.shadow import EMPTY_TREE, ShadowRepo, git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A workspace whose .git, attributes and the user's git config all try to run code."""
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "ran"
    evil = f"sh -c 'echo ran >> {marker}; cat'"
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n*.txt text eol=crlf ident\n")
    git = ws / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text(
        f'[core]\n\tfsmonitor = "{evil}"\n\thooksPath = hooks\n'
        f'[filter "evil"]\n\tclean = "{evil}"\n\tsmudge = "{evil}"\n\trequired = true\n'
    )
    for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        _executable(git / "hooks" / hook, f"#!/bin/sh\necho ran >> {marker}\n")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    for config in (home / ".gitconfig", home / ".config" / "git" / "config"):
        config.write_text(
            f'[filter "evil"]\n\tclean = "{evil}"\n\tprocess = "{evil}"\n'
            f'[core]\n\tfsmonitor = "{evil}"\n'
        )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_DIR", str(git))  # an inherited GIT_DIR must not lead git there
    return ws, marker


@pytest.fixture(params=["git add", "in slices"])
def first_snapshot(request, monkeypatch) -> str:
    """Both ways a first snapshot is taken: one `git add`, or slices hashed at once."""
    if request.param == "in slices":
        monkeypatch.setattr(shadow, "SLICE_FILES", 1)
    return request.param


def test_nothing_the_workspace_names_runs_and_bytes_round_trip(hostile, tmp_path, first_snapshot):
    ws, marker = hostile
    crlf = b"line one\r\nline two\n$Id$\r\n"
    (ws / "a.txt").write_bytes(crlf)
    (ws / "bin.dat").write_bytes(bytes(range(256)))
    git_before = {p: p.read_bytes() for p in (ws / ".git").rglob("*") if p.is_file()}
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "a.txt").write_bytes(b"changed\n")
    (ws / "bin.dat").unlink()
    now, _ = repo.snapshot()
    result = apply_changes(repo, ws, repo.changes(now, first))
    assert sorted(result.restored) == ["a.txt", "bin.dat"] and not result.failed
    assert (ws / "a.txt").read_bytes() == crlf
    assert (ws / "bin.dat").read_bytes() == bytes(range(256))
    assert not marker.exists(), marker.read_text()
    assert {p: p.read_bytes() for p in (ws / ".git").rglob("*") if p.is_file()} == git_before
    assert not (ws / ".git" / "index").exists()


def test_odd_file_names_round_trip(tmp_path, first_snapshot):
    ws = tmp_path / "ws"
    ws.mkdir()
    names = ["-rf", ":(exclude)x", "new\nline", "tab\there", "ünï cödé", "*?[glob]", " space "]
    for name in names:
        (ws / name).write_text(name)
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    for name in names:
        (ws / name).unlink()
    now, _ = repo.snapshot()
    changes = repo.changes(now, first)
    assert sorted(c.path for c in changes) == sorted(names)
    apply_changes(repo, ws, changes)
    assert sorted(os.listdir(ws)) == sorted(names)


def test_a_restore_never_writes_through_a_link(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (ws / "a.txt").write_text("original\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "a.txt").write_text("changed\n")
    now, _ = repo.snapshot()
    changes = repo.changes(now, first)
    # Between the plan and the write, a link to a file outside takes the file's place.
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(outside)
    result = apply_changes(repo, ws, changes)
    assert [path for path, _ in result.failed] == ["a.txt"]
    assert outside.read_text() == "precious\n"


def test_a_linked_directory_is_not_followed_out(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("inside\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "sub" / "f.txt").unlink()
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(elsewhere)
    now, _ = repo.snapshot()
    result = apply_changes(repo, ws, repo.changes(now, first))
    assert not (elsewhere / "f.txt").exists()
    assert result.failed or not result.restored


def test_a_diff_of_hostile_content_shows_no_control_sequence():
    from agent.tools.diffs import file_diff
    from hermes_tui.widgets.diff_view import DiffView

    evil = "x = 1\n\x1b]0;owned\x07\x1b[2J\u202egnp.exe\n"
    diff = file_diff("x = 1\n", evil, "e\x1b[31m.py")
    view = DiffView(diff.text, "e\x1b[31m.py")
    rendered = "".join(part.plain for part in view._code)
    assert "\x1b" not in rendered and "\x07" not in rendered and "\u202e" not in rendered
    assert "␛]0;owned␇" in rendered and "\\u202e" in rendered


def _has_object(repo: ShadowRepo, object_id: str) -> bool:
    return repo._git("cat-file", "-t", object_id, check=False).strip() != b""


def _tree_paths(repo: ShadowRepo, tree: str) -> set[str]:
    return {change.path for change in repo.changes(EMPTY_TREE, tree)}


def test_a_file_over_the_cap_is_never_read_into_the_repository(tmp_path):
    from agent.checkpoints.checkpointer import blob_id

    ws = tmp_path / "ws"
    ws.mkdir()
    small, big = b"small enough\n", b"x" * 4096
    (ws / "grows.bin").write_bytes(small)
    (ws / "huge.bin").write_bytes(big + b"other")
    repo = ShadowRepo(ws, tmp_path / "checkpoints", max_file_bytes=1024)
    first, skipped = repo.snapshot()
    assert skipped == ["huge.bin"]
    assert not _has_object(repo, blob_id(big + b"other"))
    # A checkpointed file that grows over the cap: left out, its old content kept (so a
    # restore never puts the small old one over it), the big one never stored.
    (ws / "grows.bin").write_bytes(big)
    now, skipped = repo.snapshot()
    assert skipped == ["grows.bin"]
    assert not _has_object(repo, blob_id(big))
    assert repo.changes(first, now) == []
    assert _tree_paths(repo, now) == {"grows.bin"}
    # Said once: later snapshots leave them out without saying it again.
    assert repo.snapshot()[1] == []


def test_a_sparse_giant_is_left_out_at_once(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with (ws / "disk.img").open("wb") as handle:
        handle.truncate(8 * 2**30)  # 8 GiB of holes: reading it would take minutes
    (ws / "a.txt").write_text("a\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    tree, skipped = repo.snapshot()
    assert skipped == ["disk.img"] and _tree_paths(repo, tree) == {"a.txt"}
    stored = sum(p.stat().st_size for p in repo.git_dir.rglob("*") if p.is_file())
    assert stored < 1_000_000


def test_the_apps_own_folder_inside_the_workspace_is_never_snapshotted(tmp_path):
    """Run in the home directory, the workspace holds HERMES_TUI_HOME: its checkpoints and
    its database are never taken into a snapshot, so never grown into nor rewound."""
    ws = tmp_path / "ws"
    home = ws / ".hermes tui[1]"
    (home / "logs").mkdir(parents=True)
    (home / "state.db").write_bytes(b"sessions v1")
    (ws / "notes.txt").write_text("mine\n")
    repo = ShadowRepo(ws, home / "checkpoints", never=[home])
    first, _ = repo.snapshot()
    (home / "state.db").write_bytes(b"sessions v2")
    (ws / "notes.txt").write_text("changed\n")
    now, _ = repo.snapshot()
    assert _tree_paths(repo, first) == {"notes.txt"} == _tree_paths(repo, now)
    apply_changes(repo, ws, repo.changes(now, first))
    assert (home / "state.db").read_bytes() == b"sessions v2"
    assert (ws / "notes.txt").read_text() == "mine\n"


def test_a_folder_swapped_for_a_link_between_plan_and_restore(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.txt").write_text("original\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("precious\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "sub" / "f.txt").write_text("changed\n")
    (ws / "sub" / "new.txt").write_text("new\n")
    now, _ = repo.snapshot()
    changes = repo.changes(now, first)
    assert sorted(c.path for c in changes) == ["sub/f.txt", "sub/new.txt"]
    # The plan is made; then the folder moves away and a link to a folder outside takes
    # its name. Neither the write nor the removal may land outside.
    (ws / "sub").rename(ws / "moved")
    (ws / "sub").symlink_to(outside)
    (outside / "new.txt").write_text("also precious\n")
    result = apply_changes(repo, ws, changes)
    assert sorted(path for path, _ in result.failed) == ["sub/f.txt", "sub/new.txt"]
    assert (outside / "f.txt").read_text() == "precious\n"
    assert (outside / "new.txt").read_text() == "also precious\n"
    assert all(reason and "\n" not in reason for _, reason in result.failed)


def test_a_file_that_became_a_folder_is_reported_not_crashed_on(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("original\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "a.txt").write_text("changed\n")
    now, _ = repo.snapshot()
    changes = repo.changes(now, first)
    (ws / "a.txt").unlink()
    (ws / "a.txt").mkdir()
    (ws / "a.txt" / "inner").write_text("kept\n")
    result = apply_changes(repo, ws, changes)
    assert [path for path, _ in result.failed] == ["a.txt"]
    assert (ws / "a.txt" / "inner").read_text() == "kept\n"


def test_a_git_file_pointing_elsewhere_is_never_followed(tmp_path):
    """A worktree's `.git` is a file naming the real git folder: the shadow repository never
    reads or writes it, nor the folder it names, nor takes the file into a snapshot."""
    ws = tmp_path / "ws"
    ws.mkdir()
    real = tmp_path / "real-git"
    (real / "hooks").mkdir(parents=True)
    (real / "HEAD").write_text("ref: refs/heads/main\n")
    (real / "config").write_text("[core]\n\tbare = false\n")
    (ws / ".git").write_text(f"gitdir: {real}\n")
    (ws / "a.txt").write_text("a\n")
    before = {p: p.read_bytes() for p in real.rglob("*") if p.is_file()}
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    first, _ = repo.snapshot()
    (ws / "a.txt").write_text("b\n")
    now, _ = repo.snapshot()
    apply_changes(repo, ws, repo.changes(now, first))
    assert _tree_paths(repo, first) == {"a.txt"}
    assert {p: p.read_bytes() for p in real.rglob("*") if p.is_file()} == before
    assert (ws / ".git").read_text() == f"gitdir: {real}\n"


def test_a_tracked_folder_turned_link_is_snapshotted_as_the_link(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.txt").write_text("inside\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    repo.snapshot()
    shutil.rmtree(ws / "sub")
    (ws / "sub").symlink_to(tmp_path)
    now, _ = repo.snapshot()
    # Not the folder's old file kept as if nothing happened: the link, as a link.
    assert _tree_paths(repo, now) == {"sub"}


def test_a_held_index_lock_fails_the_snapshot_instead_of_recording_a_stale_one(tmp_path):
    from agent.checkpoints.shadow import ShadowError

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    repo = ShadowRepo(ws, tmp_path / "checkpoints")
    repo.snapshot()
    (ws / "a.txt").write_text("two\n")
    lock = repo.git_dir / "hermes-index.lock"  # a git of another app, killed mid-write
    lock.write_text("")
    with pytest.raises(ShadowError, match=r"index\.lock"):
        repo.snapshot()
    lock.unlink()
    now, _ = repo.snapshot()
    [change] = repo.changes(EMPTY_TREE, now)
    assert repo.read_blobs([change.new_blob])[change.new_blob] == b"two\n"


def test_two_apps_on_one_workspace_take_turns_with_its_index(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    repos = [ShadowRepo(ws, tmp_path / "checkpoints") for _ in range(2)]
    failures: list[Exception] = []

    def work(index: int) -> None:
        try:
            for step in range(6):
                (ws / f"f{index}.txt").write_text(f"{step}\n")
                repos[index].snapshot()
        except Exception as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    final, _ = repos[0].snapshot()
    assert _tree_paths(repos[1], final) == {"f0.txt", "f1.txt"}


def test_a_fifo_swapped_in_after_a_write_does_not_block_the_turn(tmp_path):
    """The checkpointer reads what a file tool wrote (to tell the agent's edits from outside
    ones); a FIFO put in its place meanwhile would block a plain read, and the turn with it."""
    from agent.checkpoints.checkpointer import Checkpointer

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    updated: list[dict] = []
    checkpointer = Checkpointer.for_workspace(
        ws,
        tmp_path / "home",
        lambda _text, _level: None,
        record=lambda _session, _row: None,
        update=lambda _session, _key, fields: updated.append(fields),
    )
    try:
        checkpointer.begin_turn("s1", None)
        checkpointer.before_change("edit", "a.txt")
        (ws / "a.txt").unlink()
        os.mkfifo(ws / "a.txt")
        done = threading.Event()
        worker = threading.Thread(
            target=lambda: (checkpointer.after_change("edit", "a.txt"), done.set()), daemon=True
        )
        worker.start()
        assert done.wait(10), "after_change blocked on a FIFO"
        (ws / "a.txt").unlink()
        checkpointer.end_turn()
        checkpointer.idle()
        assert updated and updated[0]["paths"] == {"a.txt": None}
    finally:
        checkpointer.close()
