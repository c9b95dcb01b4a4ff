"""A small workspace's stamp: every entry's stat data, to tell "nothing changed" without git.

A turn's first snapshot usually finds the workspace as the last one left it; asking git
means starting a process, which on a small machine slows a fast turn more than the rest of
the checkpoint does. So each snapshot of a small workspace (at most STAMP_ENTRIES entries)
first stamps it; the next snapshot stamps it again, and an equal stamp means the same tree.

Equal stamps mean equal workspaces the way git's own index reasons: a write changes a file's
ctime (which no program sets), a new, removed or renamed entry changes its folder's. An
entry whose times fall within RACY_NS of the stamp's start could have changed again in the
same clock tick unseen, so the stamp keeps its content (a file's hash, a folder's listing)
and compares that too. Anything else (a link, an entry that vanishes mid-walk, a workspace
larger than the limit) makes no stamp, and git decides. The workspace's own `.git` is not
walked: git never snapshots it, and the user's git writes there all the time (a nested
repository's is: its HEAD is what a snapshot records of it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

STAMP_ENTRIES = 1000
"""Workspaces with more entries than this are left to git (walking them costs as much)."""
RACY_NS = 50_000_000
"""How near the stamp's start an entry's times may be and still be trusted without its
content: the filesystem's clock may lag the real one by a tick (a few milliseconds)."""
HASH_BYTES = 1 << 20
"""A file that recent and larger than this makes no stamp (hashing it would cost more)."""

Entry = tuple[int, int, int, int, int, int, int, int, bytes | None]
"""mode, size, mtime, ctime (ns), inode, device, uid, gid, and the content digest (a
file's) or listing digest (a folder's) when its times were too recent to trust alone."""


@dataclass(frozen=True)
class Stamp:
    """The workspace's entries when it was taken (None for an unusable one)."""

    entries: dict[str, Entry]


def take(root: str, skipped: Collection[str] = ()) -> Stamp | None:
    """The stamp of the folder `root` now (the folders `skipped`, relative, not walked), or
    None when it has more than STAMP_ENTRIES entries or something odd turns up.

    Each entry's stat data is read before its content, as git does: content newer than its
    stat shows as a change next time, never the other way round.
    """
    started = time.time_ns()
    entries: dict[str, Entry] = {}
    folders = [""]
    try:
        while folders:
            folder = folders.pop()
            path = os.path.join(root, folder) if folder else root
            found = os.lstat(path)
            names = sorted(os.listdir(path))
            entries[folder or "."] = _entry(found, started, functools.partial(_listing, names))
            for name in names:
                rel = f"{folder}/{name}" if folder else name
                if rel == ".git" or rel in skipped:
                    continue
                full = os.path.join(root, rel)
                found = os.lstat(full)
                if stat.S_ISDIR(found.st_mode):
                    folders.append(rel)
                elif stat.S_ISREG(found.st_mode):
                    entries[rel] = _entry(found, started, functools.partial(_digest, full))
                else:
                    return None  # a link or a special file: left to git
                if len(entries) > STAMP_ENTRIES:
                    return None
    except (OSError, _TooLarge):
        return None
    return Stamp(entries)


class _TooLarge(Exception):
    """A file too recent to trust by its times and too large to hash for a stamp."""


def _entry(found: os.stat_result, started: int, content: Callable[[], bytes]) -> Entry:
    racy = max(found.st_mtime_ns, found.st_ctime_ns) >= started - RACY_NS
    if racy and found.st_size > HASH_BYTES:
        raise _TooLarge
    return (
        found.st_mode, found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino,
        found.st_dev, found.st_uid, found.st_gid, content() if racy else None,
    )  # fmt: skip


def _listing(names: list[str]) -> bytes:
    joined = "\0".join(names).encode("utf-8", "surrogateescape")
    return hashlib.sha1(joined, usedforsecurity=False).digest()


def _digest(path: str) -> bytes:
    """The hash of the regular file at `path`; OSError for anything else (a FIFO swapped in
    would block a plain open), or when it has grown past HASH_BYTES meanwhile."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        digest = hashlib.sha1(usedforsecurity=False)
        left = HASH_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            digest.update(chunk)
            left -= len(chunk)
        if left <= 0:
            raise OSError(f"grew past {HASH_BYTES} bytes: {path}")
        return digest.digest()
    finally:
        os.close(fd)


def same(before: Stamp, now: Stamp, root: str) -> bool:
    """Whether `now` (taken later of `root`) shows the workspace as `before` did: the same
    entries with the same stat data, and the same content where `before` had to keep it."""
    if now.entries.keys() != before.entries.keys():
        return False
    for rel, then in before.entries.items():
        current = now.entries[rel]
        if current[:8] != then[:8]:
            return False
        if then[8] is not None:
            try:
                content = current[8] if current[8] is not None else _content_of(root, rel)
            except OSError:
                return False
            if content != then[8]:
                return False
    return True


def _content_of(root: str, rel: str) -> bytes:
    path = root if rel == "." else os.path.join(root, rel)
    if os.path.isdir(path):
        return _listing(sorted(os.listdir(path)))
    return _digest(path)
