"""Private files under HERMES_TUI_HOME: 0700 folders, 0600 files, atomic rewrites (SPEC H5).

Explicit modes rather than a process umask: a umask would also reach the user's workspace
files and every run_shell child. Folders that already exist keep their mode (they are the
user's); files the app owns (the database, logs, caches) lose group and other access when
opened.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: str | Path) -> Path:
    """Create `path` and any missing parents as 0700 folders; an existing folder is left as is."""
    path = Path(path)
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # created meanwhile by someone else: theirs, so its mode is theirs too
        # mkdir's mode is masked by the umask; set it exactly (a folder we just made).
        os.chmod(folder, PRIVATE_DIR_MODE)
    return path


def private_file(path: str | Path) -> Path:
    """Make sure `path` exists as a file that only its owner can use (0600 when created).

    An existing file loses its group and other permission bits and keeps its owner's (a file
    the user made read-only stays read-only). Call it before handing the path to a library
    that creates files with default modes (SQLite, logging.FileHandler): they keep the mode
    of a file that already exists.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        tighten_if_present(path)
        return path
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)  # exactly 0600, whatever the umask
    finally:
        os.close(fd)
    return path


def tighten_if_present(path: str | Path) -> None:
    """Clear the group and other permission bits of an existing file; a missing one is fine."""
    try:
        info = os.stat(path)
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISREG(info.st_mode) and mode & 0o077:
            os.chmod(path, mode & 0o700)
    except (FileNotFoundError, PermissionError):
        pass  # gone, or someone else's file: not ours to change


def atomic_write(path: str | Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` so a reader sees the old file or the new one, never half.

    A temporary file in the same folder is written and fsynced, renamed over `path`, and the
    folder is fsynced so the rename survives a power cut. The new file gets `mode` when given,
    else the mode of the file it replaces (0600 for a new file). A symlinked `path` is
    followed: its target is rewritten and the link kept (dotfile setups).
    """
    target = Path(os.path.realpath(path))
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = PRIVATE_FILE_MODE
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_dir(target.parent)


def fsync_dir(folder: str | Path) -> None:
    """fsync a folder, so a rename or a new file in it is durable (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a folder; the rename itself is still atomic
    finally:
        os.close(fd)
