"""Restore plans over a real shadow repository: what is the agent's, what is outside (X2).

Each test builds a session's checkpoint rows by hand (before, after, the paths the file
tools wrote) over real snapshots, and checks what a rewind or an undo would write back and
what it must keep because the user changed it outside the agent.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from agent.checkpoints import session as changes
from agent.checkpoints.restore import apply_changes, outside_changes, plan_restore
from agent.checkpoints.shadow import ShadowRepo, git_available

pytestmark = pytest.mark.skipif(not git_available(), reason="checkpoints need the git binary")


@pytest.fixture
def repo(tmp_path: Path) -> ShadowRepo:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "keep.txt").write_text("keep\n")
    return ShadowRepo(workspace, tmp_path / "shadow")


def snap(repo: ShadowRepo) -> str:
    return repo.snapshot()[0]


def put(repo: ShadowRepo, rel: str, text: str) -> None:
    (repo.workspace / rel).write_text(text)


def blob_of(repo: ShadowRepo, before: str, after: str, rel: str) -> str:
    [change] = [c for c in repo.changes(before, after) if c.path == rel]
    return change.new_blob


def file_turn(repo: ShadowRepo, writes: dict[str, str]) -> dict:
    """A turn whose file tools wrote `writes`: its row, as the checkpointer records it."""
    before = snap(repo)
    for rel, text in writes.items():
        put(repo, rel, text)
    after = snap(repo)
    paths = {rel: blob_of(repo, before, after, rel) for rel in writes}
    return {"key": os.urandom(4).hex(), "before_ref": before, "after_ref": after, "paths": paths}


def test_an_outside_edit_between_two_turns_is_kept_by_a_rewind_across_both(repo):
    """X2: the user's edit between turn 1 and turn 2 stays a conflict when rewinding both."""
    one = file_turn(repo, {"a.txt": "agent one\n"})
    put(repo, "user.txt", "the user's own\n")
    two = file_turn(repo, {"b.txt": "agent two\n"})
    put(repo, "late.txt", "after the last turn\n")
    now = snap(repo)
    outside = outside_changes(repo, [one, two], now)
    assert outside == {"user.txt", "late.txt"}
    plan = plan_restore(repo, [one, two], now)
    assert sorted(c.path for c in plan.restore) == ["a.txt", "b.txt"]
    assert sorted(c.path for c in plan.conflicts) == ["late.txt", "user.txt"]


def test_an_outside_edit_during_a_file_turn_is_the_users(repo):
    """X2: a file a turn's file tools did not write (or wrote otherwise) is outside."""
    before = snap(repo)
    put(repo, "a.txt", "agent\n")
    mid = snap(repo)
    written = blob_of(repo, before, mid, "a.txt")
    put(repo, "a.txt", "the user changed it after the agent\n")
    put(repo, "side.txt", "user\n")
    after = snap(repo)
    row = {"key": "k", "before_ref": before, "after_ref": after, "paths": {"a.txt": written}}
    assert outside_changes(repo, [row], after) == {"a.txt", "side.txt"}


def test_a_shell_turn_takes_every_change_during_it_for_the_agents(repo):
    """X2: a shell command can change anything: nothing during its turn is outside."""
    before = snap(repo)
    put(repo, "made.txt", "by the command\n")
    after = snap(repo)
    row = {"key": "k", "before_ref": before, "after_ref": after, "paths": {}, "shell": True}
    assert outside_changes(repo, [row], after) == set()
    put(repo, "later.txt", "user\n")
    assert outside_changes(repo, [row], snap(repo)) == {"later.txt"}


def test_a_turn_cut_off_midway_takes_nothing_for_the_agents(repo):
    """X2: a row whose end was never recorded (the app stopped): every change is kept."""
    before = snap(repo)
    put(repo, "a.txt", "written before the crash\n")
    now = snap(repo)
    row = {"key": "k", "before_ref": before, "after_ref": None, "paths": {"a.txt": "x"}}
    assert outside_changes(repo, [row], now) == {"a.txt"}
    plan = plan_restore(repo, [row], now)
    assert [c.path for c in plan.conflicts] == ["a.txt"] and not plan.restore


def test_a_restore_brings_back_the_execute_bit(repo):
    """X2: an executable the turn rewrote as plain comes back executable, and the reverse."""
    script = repo.workspace / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    plain = repo.workspace / "plain.txt"
    plain.write_text("text\n")
    before = snap(repo)
    script.chmod(0o644)
    plain.chmod(0o755)
    now = snap(repo)
    plan = plan_restore(repo, [{"key": "k", "before_ref": before, "after_ref": now,
                                "paths": {}, "shell": True}], now)  # fmt: skip
    result = apply_changes(repo, repo.workspace, plan.restore)
    assert sorted(result.restored) == ["plain.txt", "run.sh"]
    assert script.stat().st_mode & stat.S_IXUSR
    assert not plain.stat().st_mode & stat.S_IXUSR


def test_undo_touches_only_the_paths_its_turn_changed(repo, tmp_path):
    """X2: /undo of the last turn leaves an earlier turn's files and the user's alone."""
    one = file_turn(repo, {"a.txt": "turn one\n"})
    two = file_turn(repo, {"b.txt": "turn two\n", "keep.txt": "edited by turn two\n"})
    put(repo, "user.txt", "the user's\n")

    class Checkpointer:
        def __init__(self, repo):
            self.repo = repo

        def snapshot_now(self, why):
            return snap(self.repo)

    cp = Checkpointer(repo)
    step = changes.undo_step(cp, [one, two])
    assert step is not None and step.turn is two and step.rewind.chain == [two]
    rewind, plan = step.rewind, step.plan
    assert sorted(c.path for c in plan.restore) == ["b.txt", "keep.txt"]
    assert not plan.conflicts  # user.txt is not the turn's: not even asked about
    recorded, undone = [], []
    changes.apply(cp, rewind, plan, overwrite=False, record=recorded.append,
                  mark_undone=undone.append)  # fmt: skip
    ws = repo.workspace
    assert (ws / "a.txt").read_text() == "turn one\n"
    assert (ws / "keep.txt").read_text() == "keep\n"
    assert not (ws / "b.txt").exists()
    assert (ws / "user.txt").read_text() == "the user's\n"
    assert undone == [two["key"]] and recorded[0]["kind"] == "restore"


class _Snapshots:
    """The one part of the checkpointer /diff uses: a snapshot of the workspace now."""

    def __init__(self, repo: ShadowRepo) -> None:
        self.repo = repo

    def snapshot_now(self, why: str) -> str:
        return snap(self.repo)


def test_diff_shows_every_change_since_the_sessions_first_checkpoint(repo):
    """X1: /diff: an edit, a new file and a removed one, each as its diff and counts."""
    put(repo, "gone.txt", "old\n")
    first = snap(repo)
    put(repo, "keep.txt", "keep\nmore\n")
    put(repo, "new.txt", "fresh\n")
    (repo.workspace / "gone.txt").unlink()
    diffs = {d.path: d for d in changes.session_diff(_Snapshots(repo), [{"before_ref": first}])}
    assert sorted(diffs) == ["gone.txt", "keep.txt", "new.txt"]
    assert (diffs["keep.txt"].added, diffs["keep.txt"].removed) == (1, 0)
    assert "+more" in diffs["keep.txt"].text
    assert (diffs["new.txt"].added, diffs["new.txt"].removed) == (1, 0)
    assert "+fresh" in diffs["new.txt"].text
    assert (diffs["gone.txt"].added, diffs["gone.txt"].removed) == (0, 1)
    assert "-old" in diffs["gone.txt"].text
    assert changes.session_diff(_Snapshots(repo), []) == []


def test_diff_names_a_binary_change_instead_of_showing_it(repo):
    """X1: a NUL in the first 8 KiB, or bytes that are not UTF-8, make a file binary; a NUL
    later on does not (the text is shown as it is)."""
    first = snap(repo)
    (repo.workspace / "nul.bin").write_bytes(b"x" * 8191 + b"\0")
    (repo.workspace / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (repo.workspace / "late.txt").write_bytes(b"x" * 8192 + b"\0\n")
    diffs = {d.path: d for d in changes.session_diff(_Snapshots(repo), [{"before_ref": first}])}
    for path in ("nul.bin", "latin.txt"):
        assert (diffs[path].text, diffs[path].added, diffs[path].removed) == (
            "(a binary file changed)\n",
            0,
            0,
        )
    assert diffs["late.txt"].added == 1 and "binary" not in diffs["late.txt"].text


def test_the_turns_to_rewind_and_undo_are_found_among_every_row():
    """X1, X2: rows older than the kind column count as turns; a restore's row or an undone
    turn is never the one /undo takes, nor where /rewind starts."""
    rows = [
        {"key": "a", "message_id": 1},
        {"key": "b", "kind": "turn", "message_id": 3},
        {"key": "c", "kind": "restore", "message_id": 5},
        {"key": "d", "kind": "turn", "message_id": 7, "undone": True},
        {"key": "e", "kind": "restore"},
    ]
    assert [r["key"] for r in changes.rewind_to_message(rows, 1).chain] == list("abcde")
    assert [r["key"] for r in changes.rewind_to_message(rows, 2).chain] == list("bcde")
    assert [r["key"] for r in changes.rewind_to_message(rows, 4).chain] == list("de")
    assert changes.rewind_to_message(rows, 8) is None
    assert changes.rewind_to_message([{"key": "x"}], 1) is None  # no message linked
    assert [r["key"] for r in changes.turn_rows(rows)] == list("abd")
    assert changes.any_undone(rows) and not changes.any_undone(rows[:3])


def test_a_restore_that_cannot_write_names_the_path_and_why(repo):
    """X2: a path that now goes through a link, or that is no longer a file, is reported
    with its name and left alone; the rest is restored."""
    ws = repo.workspace
    (ws / "sub").mkdir()
    put(repo, "sub/a.txt", "a\n")
    before = snap(repo)
    (ws / "sub" / "a.txt").unlink()
    (ws / "sub").rmdir()
    (ws / "real").mkdir()
    (ws / "sub").symlink_to("real")  # the write back would go through it
    (ws / "d").mkdir()
    for rel in ("d/f.txt", "x.txt", "plain.txt"):
        put(repo, rel, "made by the turn\n")
    now = snap(repo)
    (ws / "d").rename(ws / "d2")
    (ws / "d").symlink_to("d2")  # the removal would go through it
    (ws / "x.txt").unlink()
    (ws / "x.txt").mkdir()  # no longer a file
    restore = [c for c in repo.changes(now, before) if c.path != "sub"]
    result = apply_changes(repo, ws, restore)
    failed = dict(result.failed)
    assert sorted(failed) == ["d/f.txt", "sub/a.txt", "x.txt"]
    assert "Refused: sub/a.txt goes through a symbolic link" in failed["sub/a.txt"]
    assert "Refused: d/f.txt goes through a symbolic link" in failed["d/f.txt"]
    assert failed["x.txt"] == "x.txt is no longer a regular file; it was left as it is."
    assert result.restored == ["plain.txt"] and not (ws / "plain.txt").exists()
    assert (ws / "d2" / "f.txt").exists() and (ws / "x.txt").is_dir()


def test_a_restore_is_recorded_as_a_checkpoint_of_its_own(repo):
    """X2: the row a restore records says what it wrote, so a later rewind counts those
    writes as the agent's; a confirmed conflict is written, an unconfirmed one kept."""
    turn = file_turn(repo, {"a.txt": "agent\n", "b.txt": "agent\n"})
    put(repo, "b.txt", "the user's edit\n")
    cp = _Snapshots(repo)
    rewind = changes.Rewind([turn])
    for overwrite in (False, True):
        plan = changes.plan(cp, rewind)
        recorded, undone = [], []
        result = changes.apply(cp, rewind, plan, overwrite=overwrite, record=recorded.append,
                               mark_undone=undone.append)  # fmt: skip
        [row] = recorded
        written = {c.path: c.new_blob for c in plan.restore + plan.conflicts * overwrite}
        assert row == {"key": row["key"], "kind": "restore", "before_ref": plan.now,
                       "after_ref": result.after, "paths": written,
                       "workspace": str(repo.workspace)}  # fmt: skip
        assert len(row["key"]) == 32 and result.before == plan.now and undone == [turn["key"]]
        assert result.kept == ([] if overwrite else ["b.txt"])
        assert sorted(result.restored) == (["a.txt", "b.txt"] if overwrite else ["a.txt"])
        put(repo, "a.txt", "agent\n")  # the turn's write again, for the second round
    assert not (repo.workspace / "b.txt").exists()


def test_diff_names_a_file_that_was_binary_before(repo):
    (repo.workspace / "was.bin").write_bytes(b"\0\1\2")
    first = snap(repo)
    put(repo, "was.bin", "text now\n")
    [diff] = changes.session_diff(_Snapshots(repo), [{"before_ref": first}])
    assert diff.text == "(a binary file changed)\n"


def test_a_turn_cut_off_between_others_keeps_every_outside_edit_of_the_chain(repo):
    """X2: with a cut-off turn in the middle, the user's edits before and after it are all
    outside, and everything the cut-off turn saw is too."""
    one = file_turn(repo, {"a.txt": "agent one\n"})
    put(repo, "early.txt", "the user's, before the crash\n")
    before = snap(repo)
    put(repo, "crash.txt", "written before the crash\n")
    cut = {"key": "cut", "before_ref": before, "after_ref": None, "paths": {}}
    three = file_turn(repo, {"c.txt": "agent three\n"})
    put(repo, "late.txt", "the user's, at the end\n")
    now = snap(repo)
    outside = outside_changes(repo, [one, cut, three], now)
    assert outside == {"early.txt", "crash.txt", "late.txt"}
    plan = plan_restore(repo, [one, cut, three], now)
    assert plan.target == one["before_ref"] and plan.now == now
    assert sorted(c.path for c in plan.restore) == ["a.txt", "c.txt"]


def test_a_link_is_never_restored_but_named(repo):
    """X2: a link the turn made is not removed by a restore: it is listed as unsupported."""
    before = snap(repo)
    (repo.workspace / "link").symlink_to("keep.txt")
    now = snap(repo)
    row = {"key": "k", "before_ref": before, "after_ref": now, "paths": {}, "shell": True}
    plan = plan_restore(repo, [row], now)
    assert [c.path for c in plan.unsupported] == ["link"] and not plan.restore


def test_undo_of_a_turn_that_changed_nothing_finds_nothing(repo):
    """X2: a turn with no change (a read-only shell command) is nothing to undo."""
    before = snap(repo)
    put(repo, "user.txt", "the user's, after the turn\n")
    row = {"key": "k", "before_ref": before, "after_ref": before, "paths": {}, "shell": True}
    assert changes.undo_step(_Snapshots(repo), [row]) is None


def test_undo_steps_back_over_turns_with_nothing_left_to_take_back(repo):
    """X2 (issue 29): each /undo takes the newest turn whose changes are still there: a
    read-only turn after it, an undone turn, a restore's row and a turn whose files the
    user already put back are stepped over."""
    cp = _Snapshots(repo)
    one = file_turn(repo, {"a.txt": "one\n"})
    two = file_turn(repo, {"b.txt": "two\n"})
    (repo.workspace / "b.txt").unlink()  # the user takes two's file back by hand
    three = {**file_turn(repo, {"c.txt": "three\n"}), "undone": True}
    restore = {**file_turn(repo, {}), "kind": "restore"}
    idle = snap(repo)
    reading = {"key": "ls", "before_ref": idle, "after_ref": idle, "paths": {}, "shell": True}
    rows = [one, two, three, restore, reading]
    step = changes.undo_step(cp, rows)
    assert step is not None and step.turn is one and step.rewind.chain == rows
    assert step.rewind.only == ("a.txt",) and [c.path for c in step.plan.restore] == ["a.txt"]
    assert changes.undo_step(cp, [{**one, "undone": True}, *rows[1:]]) is None


def test_redo_puts_back_what_the_undo_took_back_until_files_change(repo):
    """X2 (issue 29): /redo writes back what its /undo wrote, through the undos and redos
    and read-only turns since; a turn that changed files, or a rewind, ends it."""
    cp = _Snapshots(repo)
    one = file_turn(repo, {"a.txt": "agent\n"})
    step = changes.undo_step(cp, [one])
    recorded: list[dict] = []
    changes.apply(cp, step.rewind, step.plan, overwrite=False, record=recorded.append,
                  mark_undone=lambda _key: None)  # fmt: skip
    [undo_row] = recorded
    assert not (repo.workspace / "a.txt").exists()
    idle = snap(repo)
    reading = {"key": "ls", "before_ref": idle, "after_ref": idle, "paths": {}, "shell": True}
    rows = [one, undo_row, reading]

    def redo_after(rows: list[dict]) -> changes.Step | None:
        return changes.redo_step(cp, rows, one, undo_row["key"], {undo_row["key"]})

    redo = redo_after(rows)
    assert redo is not None and redo.turn is one
    assert redo.rewind == changes.Rewind([undo_row, reading], ("a.txt",), marks_undone=False)
    assert [c.path for c in redo.plan.restore] == ["a.txt"] and not redo.plan.conflicts
    put(repo, "mine.txt", "the user's, not the redo's\n")
    mine = redo_after(rows).plan  # only the undo's paths: the user's new file is not asked about
    assert [c.path for c in mine.restore] == ["a.txt"] and not mine.conflicts
    # Its own undos and redos since are stepped over; a restore's row names its kind.
    again = {**reading, "key": "again", "kind": "restore"}
    own = {undo_row["key"], "again"}
    assert changes.redo_step(cp, [*rows, again], one, undo_row["key"], own) is not None
    later = file_turn(repo, {"z.txt": "a new turn\n"})
    assert redo_after([*rows, later]) is None
    assert redo_after([one, undo_row, later]) is None  # the very next row counts too
    assert redo_after([*rows, {**reading, "key": "rw", "kind": "restore"}]) is None
    assert changes.redo_step(cp, rows, one, "unknown", set()) is None


def test_redo_of_an_undo_that_wrote_nothing_plans_nothing(repo):
    """X2: an undo row with no path (every file kept) never means every path to a redo."""
    cp = _Snapshots(repo)
    now = snap(repo)
    put(repo, "keep.txt", "the user's\n")
    undo_row = {"key": "u", "kind": "restore", "before_ref": now, "after_ref": now, "paths": {}}
    turn = {"key": "t"}
    redo = changes.redo_step(cp, [undo_row], turn, "u", {"u"})
    assert redo is not None and redo.plan.empty and redo.turn is turn
    assert redo.rewind == changes.Rewind([undo_row], (), marks_undone=False)
    assert redo.plan.target == now and "keep.txt" in {
        c.path for c in repo.changes(now, redo.plan.now)
    }


def test_a_rewind_marks_undone_only_the_turns_not_undone_yet(repo):
    one = file_turn(repo, {"a.txt": "one\n"})
    two = {**file_turn(repo, {"b.txt": "two\n"}), "undone": True}
    three = file_turn(repo, {"c.txt": "three\n"})
    rewind = changes.Rewind([one, two, three])
    plan = changes.plan(_Snapshots(repo), rewind)
    undone: list[str] = []
    changes.apply(_Snapshots(repo), rewind, plan, overwrite=False, record=lambda _row: None,
                  mark_undone=undone.append)  # fmt: skip
    assert undone == [one["key"], three["key"]]


def test_any_undone_counts_turns_only():
    """X2: a turn row (its kind given, or none, as older rows have) that is undone counts; a
    restore's row never does."""
    assert changes.any_undone([{"key": "a", "undone": True}])
    assert changes.any_undone([{"key": "a", "kind": "turn", "undone": True}])
    assert not changes.any_undone([{"key": "r", "kind": "restore", "undone": True}])
    assert not changes.any_undone([{"key": "a", "kind": "turn"}])


def test_a_rewind_limited_to_paths_plans_those_alone(repo):
    """X2: a restore planned for `only` some paths (an /undo's) leaves the turn's others."""
    row = file_turn(repo, {"a.txt": "agent\n", "b.txt": "agent too\n"})
    plan = changes.plan(_Snapshots(repo), changes.Rewind([row], ("a.txt",)))
    assert [c.path for c in plan.restore] == ["a.txt"]
    assert sorted(
        c.path for c in changes.plan(_Snapshots(repo), changes.Rewind([row])).restore
    ) == ["a.txt", "b.txt"]


def test_a_write_back_the_system_refuses_is_named_without_the_machine_path(repo):
    """X2: a file whose place is now a folder is not written back; why is said in words."""
    put(repo, "a.txt", "the agent's\n")
    with_file = snap(repo)
    (repo.workspace / "a.txt").unlink()
    (repo.workspace / "a.txt").mkdir()
    (repo.workspace / "a.txt" / "inside").write_text("the user's\n")
    changed = [c for c in repo.changes(snap(repo), with_file) if c.path == "a.txt"]
    result = apply_changes(repo, repo.workspace, changed)
    assert result.failed == [("a.txt", "Is a directory")] and result.restored == []
