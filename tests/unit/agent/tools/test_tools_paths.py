"""Race-free confinement (agent/tools/paths.py): links, re-checks at write time, modes."""

from __future__ import annotations

import os
import stat

import pytest

from agent.tools import ToolContext, paths
from agent.tools.registry import ToolError


def approving(action):
    """An approve callback that runs `action` (the hook between check and write), then says yes."""

    def approve(_request):
        action()
        return True

    return approve


# ---------------------------------------------------------------- resolving links


def test_links_inside_are_followed_for_reads(reg, ws, yolo):
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "real.txt").write_text("hi\n")
    (ws / "chain1").symlink_to("chain2")
    (ws / "chain2").symlink_to(ws / "a" / "b" / "real.txt")  # absolute, inside
    (ws / "a" / "up").symlink_to("../a/b", target_is_directory=True)
    for raw in ("chain1", "a/up/real.txt", str(ws / "chain1")):
        result = reg.run("read_file", {"path": raw}, yolo)
        assert result.output == "     1\thi", raw


def test_dotdot_after_a_link_is_taken_from_the_links_target(ws):
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "f.txt").write_text("x")
    (ws / "link").symlink_to("a/b", target_is_directory=True)
    target = paths.resolve(ws, "link/../f.txt")
    assert target.rel == "a/f.txt" and target.links == ("link",)


@pytest.mark.parametrize("to", ["../../outside", "../../../etc", "/etc"])
def test_a_link_leading_out_is_refused(reg, ws, yolo, to):
    (ws / "sub").mkdir()
    (ws / "sub" / "l").symlink_to(to, target_is_directory=True)
    result = reg.run("read_file", {"path": "sub/l/secret.txt"}, yolo)
    assert result.output == f"Refused: sub/l/secret.txt is outside the workspace {ws}."


def test_a_link_loop_is_a_sentence(reg, ws, yolo):
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    result = reg.run("read_file", {"path": "a"}, yolo)
    assert result.output == "Refused: a goes through too many symbolic links."


def test_writes_and_edits_refuse_links_inside_and_name_the_real_path(reg, ws, yolo):
    """H4: writes and edits never follow a symlink, even one inside the workspace."""
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("old\n")
    (ws / "alias").symlink_to("real", target_is_directory=True)
    (ws / "f.txt").symlink_to("real/f.txt")
    writes = [
        ("write_file", {"path": "alias/f.txt", "content": "new\n"}),
        ("write_file", {"path": "f.txt", "content": "new\n"}),
        ("edit_file", {"path": "f.txt", "old_string": "old", "new_string": "new"}),
    ]
    for name, args in writes:
        result = reg.run(name, args, yolo)
        assert not result.ok
        assert result.output.endswith("so give the real path real/f.txt."), result.output
    assert (ws / "real" / "f.txt").read_text() == "old\n"
    assert (ws / "f.txt").is_symlink()
    assert reg.run("write_file", {"path": "real/f.txt", "content": "new\n"}, yolo).ok


def test_an_absolute_path_through_a_link_above_the_workspace(reg, ws, yolo):
    (ws / "f.txt").write_text("hi\n")
    alias = ws.parent / "alias"
    alias.symlink_to(ws, target_is_directory=True)
    assert reg.run("read_file", {"path": str(alias / "f.txt")}, yolo).ok
    result = reg.run("write_file", {"path": str(alias / "f.txt"), "content": "x"}, yolo)
    assert "(a link above the workspace)" in result.output and "real path f.txt" in result.output


def test_nul_byte_and_file_as_directory(reg, ws, yolo):
    (ws / "f.txt").write_text("x")
    result = reg.run("read_file", {"path": "a\0b"}, yolo)
    assert result.output == "Invalid path 'a\\x00b': it contains a NUL byte."
    result = reg.run("write_file", {"path": "f.txt/g.txt", "content": "x"}, yolo)
    assert result.output == "f.txt is not a directory, so f.txt/g.txt cannot exist."


def test_list_dir_marks_links_by_name_only(reg, ws, yolo):
    (ws / "d").mkdir()
    (ws / "out").symlink_to(ws.parent / "outside", target_is_directory=True)
    assert reg.run("list_dir", {}, yolo).output == "d/\nout"


# ---------------------------------------------------------------- between check and write


def test_a_file_that_appeared_during_approval_is_not_overwritten(reg, ws):
    target = ws / "new.txt"
    ctx = ToolContext(ws, approve=approving(lambda: target.write_text("theirs")))
    result = reg.run("write_file", {"path": "new.txt", "content": "mine"}, ctx)
    assert not result.ok and "(a file appeared there)" in result.output
    assert target.read_text() == "theirs"


def test_a_file_modified_during_approval_is_not_overwritten(reg, ws):
    """H4: a target that changed since it was approved is refused."""
    target = ws / "a.txt"
    target.write_text("old")
    ctx = ToolContext(ws, approve=approving(lambda: target.write_text("theirs, longer")))
    result = reg.run("write_file", {"path": "a.txt", "content": "mine"}, ctx)
    assert not result.ok and "(the file was modified or replaced)" in result.output
    assert target.read_text() == "theirs, longer"


def test_a_directory_replaced_during_approval_is_refused(reg, ws):
    (ws / "d").mkdir()

    def replace():
        (ws / "d").rename(ws / "d.old")
        (ws / "d").mkdir()

    ctx = ToolContext(ws, approve=approving(replace))
    result = reg.run("write_file", {"path": "d/f.txt", "content": "x"}, ctx)
    assert result.output == (
        "Refused: d changed since it was checked (another directory took its place); "
        "nothing was written or read. Look at the path again and retry."
    )
    assert list((ws / "d").iterdir()) == [] and list((ws / "d.old").iterdir()) == []


def test_a_file_swapped_for_a_link_out_during_an_edit_is_refused(reg, ws):
    target = ws / "a.txt"
    target.write_text("top\n")
    secret = ws.parent / "outside" / "secret.txt"

    def swap():
        target.unlink()
        target.symlink_to(secret)

    ctx = ToolContext(ws, approve=approving(swap))
    result = reg.run("edit_file", {"path": "a.txt", "old_string": "top", "new_string": "x"}, ctx)
    assert not result.ok and "symbolic link" in result.output, result.output
    assert secret.read_text() == "top secret\n"


def test_a_missing_parent_made_into_a_link_during_approval_is_refused(reg, ws):
    outside = ws.parent / "outside"

    def plant():
        (ws / "new").mkdir()
        (ws / "new" / "deeper").symlink_to(outside, target_is_directory=True)

    ctx = ToolContext(ws, approve=approving(plant))
    result = reg.run("write_file", {"path": "new/deeper/f.txt", "content": "x"}, ctx)
    assert not result.ok and "(it is now a symbolic link)" in result.output
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_fifo_swapped_in_before_a_read_does_not_hang(ws):
    target_path = ws / "a.txt"
    target_path.write_text("x")
    target = paths.resolve(ws, "a.txt")
    target_path.unlink()
    os.mkfifo(target_path)
    with pytest.raises(ToolError, match="another file took its place"):
        paths.open_file(target)


# ---------------------------------------------------------------- how the file is written


@pytest.mark.parametrize("mode", [0o600, 0o755, 0o640])
def test_an_overwrite_keeps_the_files_mode(reg, ws, yolo, mode):
    target = ws / "a.txt"
    target.write_text("old")
    target.chmod(mode)
    assert reg.run("write_file", {"path": "a.txt", "content": "new"}, yolo).ok
    assert stat.S_IMODE(target.stat().st_mode) == mode
    edit = {"path": "a.txt", "old_string": "new", "new_string": "newer"}
    assert reg.run("edit_file", edit, yolo).ok
    assert stat.S_IMODE(target.stat().st_mode) == mode and target.read_text() == "newer"


def test_a_new_file_gets_the_umask_mode(reg, ws, yolo):
    old = os.umask(0o022)
    try:
        assert reg.run("write_file", {"path": "n.txt", "content": "x"}, yolo).ok
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "n.txt").stat().st_mode) == 0o644


def test_a_hard_link_to_a_file_outside_is_not_written_through(reg, ws, yolo):
    secret = ws.parent / "outside" / "secret.txt"
    os.link(secret, ws / "h.txt")
    assert reg.run("write_file", {"path": "h.txt", "content": "pwned"}, yolo).ok
    edit = {"path": "h.txt", "old_string": "pwned", "new_string": "again"}
    assert reg.run("edit_file", edit, yolo).ok
    assert secret.read_text() == "top secret\n"
    assert (ws / "h.txt").read_text() == "again"


def test_no_temporary_file_is_left_behind(reg, ws, yolo):
    (ws / "d").mkdir()
    assert reg.run("write_file", {"path": "d/a.txt", "content": "x"}, yolo).ok
    (ws / "d").chmod(0o500)
    try:
        result = reg.run("write_file", {"path": "d/a.txt", "content": "y"}, yolo)
    finally:
        (ws / "d").chmod(0o700)
    if os.geteuid() != 0:
        assert result.output == "Could not write d/a.txt: Permission denied."
    assert sorted(p.name for p in (ws / "d").iterdir()) == ["a.txt"]
