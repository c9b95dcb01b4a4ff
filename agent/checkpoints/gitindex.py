"""Git's index file, version 2: the entries of several, joined into one.

A first snapshot of a large workspace is hashed by several `git update-index` processes at
once, each into an index of its own over a slice of the sorted paths; joining them is laying
their entries end to end. Only what those processes write is read here: version 2, no
extended flags. Extensions (the cache tree, the untracked cache) are dropped: git rebuilds
them. The format: https://git-scm.com/docs/index-format
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_HEADER = struct.Struct(">4sII")
_FIXED = 62
"""Bytes of an entry before its path: stat data, mode, ids, size, object id and flags."""
_WORD = struct.Struct(">I")
_FLAGS = struct.Struct(">H")
_MTIME_AT, _MODE_AT, _SIZE_AT, _OID_AT, _FLAGS_AT = 8, 24, 36, 40, 60
_NAME_MASK = 0x0FFF
_EXTENDED = 0x4000


class IndexFormatError(ValueError):
    """An index file that is not the plain version 2 this module joins."""


@dataclass
class Joined:
    """What a joined index holds: each file as (path, mode, object id), in order, and the
    paths of the entries smudged (for `git update-index` to read again)."""

    files: list[tuple[bytes, int, bytes]] = field(default_factory=list)
    smudged: list[bytes] = field(default_factory=list)


def _entries(data: bytes, written: int, joined: Joined) -> list[bytes]:
    """The entries of one index written at second `written`, each as its bytes; its files
    and smudged paths are added to `joined`.

    A file changed in the second its index was written could change again unseen ("racily
    clean": git may compare times to the second); git reads such a file again while its
    index is not newer. The joined index may be, so those entries get size 0 ("smudged", as
    git does): the next look at them reads them whatever their times say.
    """
    if len(data) < _HEADER.size + 20:
        raise IndexFormatError("too short")
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version != 2 or count == 0:
        raise IndexFormatError(f"not a version 2 index ({signature!r}, {version}, {count})")
    entries = []
    offset, limit = _HEADER.size, len(data) - 20
    files, smudged = joined.files, joined.smudged
    for _ in range(count):
        (flags,) = _FLAGS.unpack_from(data, offset + _FLAGS_AT)
        length = flags & _NAME_MASK
        if flags & _EXTENDED or length == _NAME_MASK:
            raise IndexFormatError("extended flags or a path of 4 KB or more")
        end = offset + _FIXED + length
        size = (_FIXED + length + 8) & ~7
        if offset + size > limit or data[end] != 0:
            raise IndexFormatError("an entry that does not end where its flags say")
        path = data[offset + _FIXED : end]
        if files and path <= files[-1][0]:
            # git writes each index sorted: this checks the seams between parts.
            raise IndexFormatError("paths out of order")
        (mode,) = _WORD.unpack_from(data, offset + _MODE_AT)
        files.append((path, mode, data[offset + _OID_AT : offset + _OID_AT + 20]))
        if _WORD.unpack_from(data, offset + _MTIME_AT)[0] >= written:
            entry = bytearray(data[offset : offset + size])
            entry[_SIZE_AT : _SIZE_AT + 4] = bytes(4)
            entries.append(bytes(entry))
            smudged.append(path)
        else:
            entries.append(data[offset : offset + size])
        offset += size
    return entries


def join_indexes(parts: Sequence[Path], target: Path) -> Joined:
    """Write `target` with the entries of `parts` end to end; returns what it holds.

    Each part covers a slice of the paths, in order: every path of a part sorts before
    every path of the next (IndexFormatError otherwise, and nothing is written).
    """
    entries: list[bytes] = []
    joined = Joined()
    for part in parts:
        written = os.stat(part).st_mtime_ns // 1_000_000_000
        entries.extend(_entries(part.read_bytes(), written, joined))
    body = _HEADER.pack(b"DIRC", 2, len(entries)) + b"".join(entries)
    checksum = hashlib.sha1(body, usedforsecurity=False).digest()
    temporary = target.with_name(target.name + ".joining")
    temporary.write_bytes(body + checksum)
    os.replace(temporary, target)
    return joined
