"""storage/files.py: private folders and files, atomic rewrites that keep the mode (SPEC H5)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from storage import files
from storage.files import atomic_write, private_dir, private_file


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_zero():
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask_zero")
def test_private_dir_makes_every_missing_folder_0700(tmp_path):
    target = private_dir(tmp_path / "a" / "b")
    assert mode(tmp_path / "a") == 0o700 and mode(target) == 0o700


def test_private_dir_leaves_an_existing_folder_alone(tmp_path):
    (tmp_path / "mine").mkdir(mode=0o755)
    (tmp_path / "mine").chmod(0o755)
    private_dir(tmp_path / "mine")
    assert mode(tmp_path / "mine") == 0o755


@pytest.mark.usefixtures("umask_zero")
def test_private_file_creates_0600_and_tightens_without_granting(tmp_path):
    assert mode(private_file(tmp_path / "new.log")) == 0o600
    loose = tmp_path / "loose.log"
    loose.write_text("x")
    loose.chmod(0o664)
    private_file(loose)
    assert mode(loose) == 0o600 and loose.read_text() == "x"
    readonly = tmp_path / "readonly.db"
    readonly.write_text("x")
    readonly.chmod(0o444)
    private_file(readonly)
    assert mode(readonly) == 0o400  # the user's read-only choice stands


@pytest.mark.usefixtures("umask_zero")
def test_atomic_write_keeps_the_mode_and_a_new_file_is_0600(tmp_path):
    kept = tmp_path / "config.yaml"
    kept.write_text("old\n")
    kept.chmod(0o640)
    atomic_write(kept, "new\n")
    assert kept.read_text() == "new\n" and mode(kept) == 0o640
    fresh = tmp_path / "fresh.yaml"
    atomic_write(fresh, "x")
    assert mode(fresh) == 0o600
    atomic_write(kept, b"forced", mode=0o600)
    assert mode(kept) == 0o600


def test_atomic_write_writes_fsyncs_renames_then_fsyncs_the_folder(tmp_path, monkeypatch):
    target = tmp_path / "config.yaml"
    target.write_text("old\n")
    target.chmod(0o600)
    steps: list[tuple] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        steps.append(("fsync", kind))
        real_fsync(fd)

    def replace(src, dst):
        src = Path(src)
        # At the rename the temporary is complete, private, and in the same folder.
        steps.append(("replace", src.parent == tmp_path, src.read_text(), mode(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    atomic_write(target, "new content\n")
    assert steps == [
        ("fsync", "file"),
        ("replace", True, "new content\n", 0o600, target),
        ("fsync", "folder"),
    ]


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    folder = tmp_path / "home"
    folder.mkdir()
    target = folder / "config.yaml"
    target.write_text("old\n")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError):
        atomic_write(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in folder.iterdir()] == ["config.yaml"]


def test_atomic_write_follows_a_symlink_and_keeps_it(tmp_path):
    real = tmp_path / "dotfiles" / "config.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    atomic_write(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
