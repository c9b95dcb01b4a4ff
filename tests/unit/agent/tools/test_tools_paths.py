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


# ---------------------------------------------------------------- resolving, exactly (A4, H4)


def refusal(rel: str, what: str) -> str:
    return (
        f"Refused: {rel} changed since it was checked ({what}); nothing was written or read. "
        "Look at the path again and retry."
    )


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_an_empty_path_is_refused_unless_a_default_is_given(ws, raw):
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, raw)
    assert str(caught.value) == "The path argument is empty; give a file path."
    target = paths.resolve(ws, raw, default=".")
    assert target.rel == "." and target.parts == () and target.final == target.root


def test_an_absolute_path_outside_is_refused_in_the_models_words(ws):
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, "/etc/passwd")
    assert str(caught.value) == f"Refused: /etc/passwd is outside the workspace {ws}."
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, "../outside/secret.txt")
    assert str(caught.value) == f"Refused: ../outside/secret.txt is outside the workspace {ws}."


def test_a_workspace_that_cannot_be_opened_is_a_sentence(tmp_path):
    with pytest.raises(ToolError) as caught:
        paths.resolve(tmp_path / "gone", "a.txt")
    assert str(caught.value) == "Could not open a.txt: No such file or directory."


def test_an_absolute_path_inside_walks_its_own_links(ws):
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("x")
    (ws / "alias").symlink_to("real", target_is_directory=True)
    direct = paths.resolve(ws, str(ws / "real" / "f.txt"))
    assert direct.rel == "real/f.txt" and direct.links == ()
    via = paths.resolve(ws, str(ws / "alias" / "f.txt"))
    assert via.rel == "real/f.txt" and via.links == ("alias",)  # not "a link above"
    assert via.path == ws / "real" / "f.txt"
    with pytest.raises(ToolError, match=r"\(alias\); files are not written through links"):
        via.refuse_links("alias/f.txt")


def test_dotdot_out_of_a_missing_directory_finds_what_exists(ws):
    (ws / "f.txt").write_text("x")
    target = paths.resolve(ws, "missing/../f.txt")
    assert target.rel == "f.txt" and target.final is not None and target.final.is_file


def test_below_a_missing_directory_nothing_is_looked_at(ws):
    (ws / "x.txt").write_text("a namesake one level up")
    target = paths.resolve(ws, "missing/x.txt")
    assert target.rel == "missing/x.txt" and target.stamps == (None, None)


def test_an_absolute_link_deep_in_the_tree_restarts_from_the_root(ws):
    (ws / "a").mkdir()
    (ws / "x").mkdir()
    (ws / "x" / "f.txt").write_text("x")
    (ws / "a" / "l").symlink_to(ws / "x", target_is_directory=True)
    target = paths.resolve(ws, "a/l/f.txt")
    assert target.rel == "x/f.txt" and target.final is not None and target.final.is_file
    assert target.links == ("a/l",)
    with pytest.raises(ToolError, match=r"\(a/l\); files are not written"):
        target.refuse_links("a/l/f.txt")


def test_a_link_to_a_spelling_above_the_workspace_is_recorded(ws):
    (ws / "f.txt").write_text("x")
    alias = ws.parent / "alias"
    alias.symlink_to(ws, target_is_directory=True)
    (ws / "l").symlink_to(alias / "f.txt")
    target = paths.resolve(ws, "l")
    assert target.rel == "f.txt" and target.links == ("l", paths.ABOVE_WORKSPACE)


def test_forty_links_are_followed_and_the_forty_first_is_refused(ws):
    (ws / "f.txt").write_text("x")
    for n in range(41):
        (ws / f"l{n}").symlink_to(f"l{n + 1}" if n < 40 else "f.txt")
    assert paths.resolve(ws, "l1").rel == "f.txt"  # l1 .. l40: forty links
    with pytest.raises(ToolError, match="too many symbolic links"):
        paths.resolve(ws, "l0")


def test_a_file_in_the_middle_of_a_path_is_named(ws):
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("x")
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, "d/f.txt/g")
    assert str(caught.value) == "d/f.txt is not a directory, so d/f.txt/g cannot exist."


def swapping_open_dir(monkeypatch, when: str, swap):
    """Run `swap()` just before the walk opens the directory `when` (between its stat and
    its open: the window a racing process has)."""
    real = paths._open_dir

    def open_dir(name, parent, rel):
        if rel == when:
            swap()
        return real(name, parent, rel)

    monkeypatch.setattr(paths, "_open_dir", open_dir)


def test_a_directory_swapped_for_a_link_during_the_walk_is_refused(ws, monkeypatch):
    (ws / "a" / "b").mkdir(parents=True)

    def swap():
        (ws / "a" / "b").rmdir()
        (ws / "a" / "b").symlink_to(ws.parent / "outside", target_is_directory=True)

    swapping_open_dir(monkeypatch, "a/b", swap)
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, "a/b/secret.txt")
    assert str(caught.value) == refusal("a/b", "it is now a symbolic link")


def test_a_directory_replaced_during_the_walk_is_refused(ws, monkeypatch):
    (ws / "a" / "b").mkdir(parents=True)

    def swap():
        (ws / "a" / "b").rename(ws / "a" / "old")
        (ws / "a" / "b").mkdir()

    swapping_open_dir(monkeypatch, "a/b", swap)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ToolError) as caught:
        paths.resolve(ws, "a/b/f.txt")
    assert str(caught.value) == refusal("a/b", "it was replaced while being looked up")
    assert len(os.listdir("/proc/self/fd")) == before  # every descriptor closed


def test_why_a_directory_cannot_be_walked_through(ws):
    (ws / "file").write_text("x")
    (ws / "dir").mkdir()
    (ws / "link").symlink_to("dir")
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        said = {name: paths._what_it_is(name, fd) for name in ("gone", "file", "dir", "link")}
    finally:
        os.close(fd)
    assert said == {
        "gone": "it is gone",
        "file": "it is no longer a directory",
        "dir": "it was replaced",
        "link": "it is now a symbolic link",
    }


def test_display_is_workspace_relative(ws):
    assert paths.display(ws, ws) == "."
    assert paths.display(ws, ws / "a" / "b.txt") == "a/b.txt"
    assert paths.display(ws, ws.parent / "outside") == str(ws.parent / "outside")


# ---------------------------------------------------------------- opening what was resolved


def test_open_dir_refuses_what_is_not_a_directory(ws):
    (ws / "f.txt").write_text("x")
    for raw in ("f.txt", "missing"):
        with pytest.raises(ToolError) as caught:
            paths.open_dir(paths.resolve(ws, raw))
        assert str(caught.value) == f"{raw} is not a directory."
    (ws / "d").mkdir()
    fd = paths.open_dir(paths.resolve(ws, "d"))
    try:
        assert os.listdir(fd) == []
    finally:
        os.close(fd)


def test_a_read_refuses_a_file_removed_since_it_was_resolved(ws):
    (ws / "a.txt").write_text("x")
    target = paths.resolve(ws, "a.txt")
    (ws / "a.txt").unlink()
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(target)
    assert str(caught.value) == refusal("a.txt", "it is gone")


def test_a_read_refuses_a_file_swapped_for_a_link(ws):
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("x")
    target = paths.resolve(ws, "d/a.txt")
    (ws / "d" / "a.txt").unlink()
    (ws / "d" / "a.txt").symlink_to(ws.parent / "outside" / "secret.txt")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(target)
    assert str(caught.value) == refusal("d/a.txt", "it is now a symbolic link")


def test_a_read_refuses_a_file_that_did_not_exist_or_was_replaced(ws):
    missing = paths.resolve(ws, "n.txt")
    (ws / "n.txt").write_text("appeared")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(missing)
    assert str(caught.value) == refusal("n.txt", "another file took its place")
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("old")
    target = paths.resolve(ws, "d/a.txt")
    (ws / "d" / "b.txt").write_text("new inode")  # made while a.txt exists: its own inode
    (ws / "d" / "b.txt").replace(ws / "d" / "a.txt")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(target)
    assert str(caught.value) == refusal("d/a.txt", "another file took its place")
    assert paths.read_bytes(paths.resolve(ws, "d/a.txt")) == b"new inode"


def test_a_read_below_a_directory_that_did_not_exist_is_refused_and_creates_nothing(ws):
    target = paths.resolve(ws, "new/f.txt")
    (ws / "new").mkdir()
    (ws / "new" / "f.txt").write_text("x")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(target)
    assert str(caught.value) == refusal("new", "it did not exist")
    later = paths.resolve(ws, "later/f.txt")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(later)
    assert str(caught.value) == refusal("later", "it did not exist")
    assert not (ws / "later").exists()  # a read never makes directories


def test_the_workspace_replaced_since_the_check_is_refused(ws):
    (ws / "a.txt").write_text("x")
    target = paths.resolve(ws, "a.txt")
    ws.rename(ws.parent / "ws.old")
    ws.mkdir()
    (ws / "a.txt").write_text("y")
    with pytest.raises(ToolError) as caught:
        paths.read_bytes(target)
    assert str(caught.value) == refusal(".", "the workspace directory was replaced")


# ---------------------------------------------------------------- writing what was resolved


def test_a_write_creates_missing_parents_inside_the_workspace(ws, tmp_path, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the process's cwd is never where parents are made
    target = paths.resolve(ws, "new/deeper/f.txt")
    paths.write_bytes(target, b"x")
    assert (ws / "new" / "deeper" / "f.txt").read_bytes() == b"x"
    assert list(elsewhere.iterdir()) == []


def test_a_parent_removed_during_approval_is_gone(reg, ws):
    (ws / "a" / "d").mkdir(parents=True)
    ctx = ToolContext(ws, approve=approving(lambda: (ws / "a" / "d").rmdir()))
    result = reg.run("write_file", {"path": "a/d/f.txt", "content": "x"}, ctx)
    assert result.output == refusal("a/d", "it is gone")
    assert not (ws / "a" / "d").exists()


def test_a_nested_parent_replaced_during_approval_is_named(reg, ws):
    (ws / "a" / "d").mkdir(parents=True)

    def replace():
        (ws / "a" / "d").rename(ws / "a" / "d.old")
        (ws / "a" / "d").mkdir()

    ctx = ToolContext(ws, approve=approving(replace))
    result = reg.run("write_file", {"path": "a/d/f.txt", "content": "x"}, ctx)
    assert result.output == refusal("a/d", "another directory took its place")


def test_a_parent_turned_into_a_file_or_link_during_approval_is_refused(reg, ws):
    (ws / "a" / "d").mkdir(parents=True)

    def to_file():
        (ws / "a" / "d").rmdir()
        (ws / "a" / "d").write_text("now a file")

    ctx = ToolContext(ws, approve=approving(to_file))
    result = reg.run("write_file", {"path": "a/d/f.txt", "content": "x"}, ctx)
    assert result.output == refusal("a/d", "it is no longer a directory")
    (ws / "b").mkdir()

    def to_link():
        (ws / "b").rmdir()
        (ws / "b").symlink_to(ws.parent / "outside", target_is_directory=True)

    ctx = ToolContext(ws, approve=approving(to_link))
    result = reg.run("write_file", {"path": "b/f.txt", "content": "x"}, ctx)
    assert result.output == refusal("b", "it is now a symbolic link")


def test_the_target_file_changing_during_approval_is_refused_by_name(reg, ws):
    (ws / "d").mkdir()
    target = ws / "d" / "a.txt"

    def cases():
        yield "a file appeared there", None, lambda: target.write_text("theirs")
        yield "the file was removed", "old", target.unlink
        yield "the file was modified or replaced", "old", lambda: target.write_text("longer!")

        def to_link():
            target.unlink()
            target.symlink_to(ws.parent / "outside" / "secret.txt")

        yield "it is now a symbolic link", "old", to_link

        def to_dangling_link():
            target.symlink_to(ws.parent / "outside" / "nothing.txt")

        yield "a file appeared there", None, to_dangling_link

    for what, before, action in cases():
        if target.is_symlink() or target.exists():
            target.unlink()
        if before is not None:
            target.write_text(before)
        ctx = ToolContext(ws, approve=approving(action))
        result = reg.run("write_file", {"path": "d/a.txt", "content": "mine"}, ctx)
        assert result.output == refusal("d/a.txt", what), what
    assert target.is_symlink()  # the dangling link was not written over
    assert not (ws.parent / "outside" / "nothing.txt").exists()
    assert (ws.parent / "outside" / "secret.txt").read_text() == "top secret\n"


def test_a_replacement_is_private_until_it_takes_the_old_mode(reg, ws, yolo, monkeypatch):
    target = ws / "a.txt"
    target.write_text("old")
    target.chmod(0o640)
    seen: list[int] = []
    real_fchmod = os.fchmod

    def fchmod(fd, mode):
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", fchmod)
    old = os.umask(0o022)
    try:
        assert reg.run("write_file", {"path": "a.txt", "content": "new"}, yolo).ok
    finally:
        os.umask(old)
    assert seen == [0o600] and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_file_with_the_longest_name_can_be_replaced(reg, ws, yolo):
    name = "n" * 255  # NAME_MAX: the temporary name must stay within it too
    assert reg.run("write_file", {"path": name, "content": "one"}, yolo).ok
    assert reg.run("write_file", {"path": name, "content": "two"}, yolo).ok
    assert (ws / name).read_text() == "two" and len(os.listdir(ws)) == 1


def test_a_long_name_of_wide_characters_can_be_replaced(reg, ws, yolo):
    name = "\u00e9" * 127  # 254 bytes in UTF-8: the temporary name is cut in bytes, not characters
    assert reg.run("write_file", {"path": name, "content": "one"}, yolo).ok
    assert reg.run("write_file", {"path": name, "content": "two"}, yolo).ok
    assert (ws / name).read_text() == "two" and len(os.listdir(ws)) == 1


def test_a_failed_write_leaves_no_temporary_file(reg, ws, yolo, monkeypatch):
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("old")

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    result = reg.run("write_file", {"path": "d/a.txt", "content": "new"}, yolo)
    assert result.output == "Could not write d/a.txt: No space left on device."
    assert os.listdir(ws / "d") == ["a.txt"] and (ws / "d" / "a.txt").read_text() == "old"


def test_a_replacement_is_written_under_a_hidden_temporary_name_beside_the_file(ws, monkeypatch):
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("old")
    target = paths.resolve(ws, "d/a.txt")
    seen: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd):
        seen.append(sorted(os.listdir(ws / "d")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    paths.write_bytes(target, b"new")
    [(temp, old)] = seen
    assert old == "a.txt" and temp.startswith(".a.txt.") and temp.endswith(".tmp")
    assert os.listdir(ws / "d") == ["a.txt"] and (ws / "d" / "a.txt").read_text() == "new"


# ---------------------------------------------------------------- restoring a checkpoint (X2)


@pytest.mark.parametrize(
    ("before", "executable", "after"),
    [
        (0o644, True, 0o755),
        (0o640, True, 0o750),  # execute only where it can read
        (0o600, True, 0o700),
        (0o755, False, 0o644),
        (0o751, False, 0o640),
        (0o640, None, 0o640),  # not said: the file keeps its mode
    ],
)
def test_x2_a_restored_file_gets_the_execute_bits_it_had(ws, before, executable, after):
    (ws / "run.sh").write_text("old")
    (ws / "run.sh").chmod(before)
    paths.write_bytes(paths.resolve(ws, "run.sh"), b"restored", executable=executable)
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == after
    assert (ws / "run.sh").read_text() == "restored"


@pytest.mark.parametrize(("executable", "after"), [(True, 0o755), (False, 0o644), (None, 0o644)])
def test_x2_a_restored_file_that_was_deleted_comes_back_with_its_execute_bits(
    ws, executable, after
):
    old = os.umask(0o022)
    try:
        paths.write_bytes(paths.resolve(ws, "d/run.sh"), b"back", executable=executable)
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "d" / "run.sh").stat().st_mode) == after


def test_x2_a_file_changed_since_it_was_checked_is_not_removed(ws):
    (ws / "d").mkdir()
    (ws / "d" / "a.txt").write_text("made by the turn")
    target = paths.resolve(ws, "d/a.txt")
    (ws / "d" / "a.txt").write_text("edited by the user since")
    with pytest.raises(ToolError) as caught:
        paths.remove_file(target)
    assert str(caught.value) == refusal("d/a.txt", "the file was modified or replaced")
    assert (ws / "d" / "a.txt").read_text() == "edited by the user since"
    missing = paths.resolve(ws, "d/b.txt")
    (ws / "d" / "b.txt").write_text("appeared since")
    with pytest.raises(ToolError) as caught:
        paths.remove_file(missing)
    assert str(caught.value) == refusal("d/b.txt", "the file was modified or replaced")
    assert (ws / "d" / "b.txt").exists()


def test_x2_removing_a_file_that_is_gone_already_is_no_error(ws):
    (ws / "a.txt").write_text("x")
    target = paths.resolve(ws, "a.txt")
    (ws / "a.txt").unlink()
    paths.remove_file(target)
    (ws / "b.txt").write_text("x")
    paths.remove_file(paths.resolve(ws, "b.txt"))
    assert os.listdir(ws) == []
