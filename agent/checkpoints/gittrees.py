"""The trees of a list of files, written as one git pack.

After a first snapshot hashed in slices, the files (path, mode, blob id) are known; their
folders' trees are made here and written into a single pack, where `git write-tree` would
write each as a file of its own: on a filesystem that has just freed many inodes, creating
a hundred of them costs more than all the rest of the work. The formats:
https://git-scm.com/docs/gitformat-pack
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path

_TREE_TYPE = 2
_TREE_MODE = b"40000"
_PACK_VERSION = 2
_IDX_MAGIC = b"\xfftOc"


# Each folder's entries by the folder's path: name, mode, object id, whether a folder.
_Folders = dict[bytes, list[tuple[bytes, bytes, bytes, bool]]]


def _object_id(kind: bytes, body: bytes) -> bytes:
    return hashlib.sha1(b"%s %d\0" % (kind, len(body)) + body, usedforsecurity=False).digest()


def _tree_key(name: bytes, is_tree: bool) -> bytes:
    """git orders a tree's entries by name, a folder's name as if it ended in a slash."""
    return name + b"/" if is_tree else name


def build_trees(files: Iterable[tuple[bytes, int, bytes]]) -> tuple[bytes, dict[bytes, bytes]]:
    """The root tree id of `files` (path, mode, object id; no folder may also be a file's
    path), and every tree's body by its id."""
    folders: _Folders = {b"": []}
    for path, mode, oid in files:
        parent, _, name = path.rpartition(b"/")
        if parent not in folders:
            _add_folder(folders, parent)
        folders[parent].append((name, b"%o" % mode, oid, False))
    trees: dict[bytes, bytes] = {}
    ids: dict[bytes, bytes] = {}
    # Deepest first: a folder's tree needs its subfolders' ids.
    for folder in sorted(folders, key=lambda name: name.count(b"/") + bool(name), reverse=True):
        entries = folders[folder]
        entries.sort(key=lambda entry: _tree_key(entry[0], entry[3]))
        body = b"".join(b"%s %s\0%s" % (mode, name, oid) for name, mode, oid, _ in entries)
        tree = _object_id(b"tree", body)
        trees[tree] = body
        ids[folder] = tree
        if folder:
            parent, _, name = folder.rpartition(b"/")
            folders[parent].append((name, _TREE_MODE, tree, True))
    return ids[b""], trees


def _add_folder(folders: _Folders, folder: bytes) -> None:
    """Make `folder` and each of its missing parents, each listed in its parent."""
    folders[folder] = []
    parent = folder.rpartition(b"/")[0]
    if parent not in folders:
        _add_folder(folders, parent)


def _pack_header(kind: int, size: int) -> bytes:
    """An object's header in a pack: its type and size, seven bits a byte after the first."""
    first = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(first | 0x80)
        first = size & 0x7F
        size >>= 7
    out.append(first)
    return bytes(out)


_LARGE = 0x80000000
"""An offset from here on lives in the index's 8-byte table; its 4-byte entry points there."""


def offset_tables(offsets: list[int]) -> bytes:
    """An index's offset tables for `offsets` (in object id order): 4 bytes each, and for
    an offset of 2 GiB or more, its entry's top bit set over its place in the 8-byte table."""
    small = bytearray()
    large = bytearray()
    for offset in offsets:
        if offset < _LARGE:
            small += struct.pack(">I", offset)
        else:
            small += struct.pack(">I", _LARGE | (len(large) // 8))
            large += struct.pack(">Q", offset)
    return bytes(small + large)


def write_pack(objects: dict[bytes, bytes], pack_dir: Path, kind: int = _TREE_TYPE) -> Path:
    """Write `objects` (id -> body, all of one `kind`) as a pack and its index; the pack."""
    pack = bytearray(b"PACK" + struct.pack(">II", _PACK_VERSION, len(objects)))
    where: dict[bytes, tuple[int, int]] = {}
    for oid, body in objects.items():
        packed = _pack_header(kind, len(body)) + zlib.compress(body, 1)
        where[oid] = (len(pack), zlib.crc32(packed))
        pack += packed
    pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
    pack += pack_sum
    ordered = sorted(objects)
    fanout = [0] * 256
    for oid in ordered:
        fanout[oid[0]] += 1
    total = 0
    for byte in range(256):
        total += fanout[byte]
        fanout[byte] = total
    idx = bytearray(_IDX_MAGIC + struct.pack(">I", 2) + struct.pack(">256I", *fanout))
    idx += b"".join(ordered)
    idx += b"".join(struct.pack(">I", where[oid][1]) for oid in ordered)
    idx += offset_tables([where[oid][0] for oid in ordered])
    idx += pack_sum
    idx += hashlib.sha1(idx, usedforsecurity=False).digest()
    name = f"pack-{pack_sum.hex()}"
    # The pack before its index: git looks for packs by their index files.
    for suffix, data in ((".pack", pack), (".idx", idx)):
        handle, temporary = tempfile.mkstemp(dir=pack_dir, prefix="tmp_hermes_")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o444)
        os.replace(temporary, pack_dir / f"{name}{suffix}")
    return pack_dir / f"{name}.pack"
