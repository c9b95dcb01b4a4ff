"""The trees' pack and its index, checked against git's own reader and the format's rules.

The first snapshot writes its trees as one pack (checkpoints/gittrees.py); git must read
every object of it, and an offset past 2 GiB must go to the index's 8-byte table, where a
4-byte entry would wrap silently (X2).
"""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from agent.checkpoints.gittrees import build_trees, offset_tables, write_pack


def test_small_offsets_are_four_bytes_each():
    """X2: offsets under 2 GiB are the 4-byte table alone, in order."""
    assert offset_tables([12, 400, 2**31 - 1]) == struct.pack(">3I", 12, 400, 2**31 - 1)


def test_an_offset_past_two_gib_goes_to_the_large_table():
    """X2: from 2**31 on, the 4-byte entry is the top bit over the 8-byte table's place."""
    offsets = [12, 2**31, 5, 2**33 + 7]
    table = offset_tables(offsets)
    small = struct.unpack_from(">4I", table, 0)
    assert small == (12, 0x80000000 | 0, 5, 0x80000000 | 1)
    large = struct.unpack_from(">2Q", table, 16)
    assert large == (2**31, 2**33 + 7)
    assert len(table) == 4 * 4 + 2 * 8


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
def test_git_reads_every_tree_of_the_pack(tmp_path):
    """X2: the pack and its index are what git writes: it verifies and lists each tree."""
    blob = bytes(range(20))  # a blob id; ls-tree never reads the blob
    files = [(f"d{i % 7}/s{i % 3}/f{i}.txt".encode(), 0o100644, blob) for i in range(60)]
    files.append((b"top.txt", 0o100755, blob))
    root, trees = build_trees(files)
    git_dir = tmp_path / "repo.git"
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, env=env)
    pack_dir = git_dir / "objects" / "pack"
    pack = write_pack(trees, pack_dir)
    run = {"cwd": git_dir, "env": {**env, "GIT_DIR": str(git_dir)}, "capture_output": True}
    verified = subprocess.run(["git", "verify-pack", "-v", str(pack)], check=True, **run)
    listed_ids = {
        line.split()[0] for line in verified.stdout.decode().splitlines() if " tree " in line
    }
    assert listed_ids == {tree.hex() for tree in trees}
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", root.hex()], check=True, **run)
    names = sorted(listed.stdout.decode().split())
    assert names == sorted(path.decode() for path, _, _ in files)
