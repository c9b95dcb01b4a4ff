"""A session's checkpoints as /rewind, /undo and /diff use them (X1, X2).

Every function here blocks on git: callers run them off the UI thread. They take the
session's checkpoint rows (storage's `list_checkpoints`) as read by the caller.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.checkpoints.checkpointer import Checkpointer
from agent.checkpoints.restore import RestorePlan, RestoreResult, apply_changes, plan_restore
from agent.tools.diffs import FileDiff, file_diff

NOTHING_TO_UNDO = (
    "Nothing to undo: no turn of this session has changed a file. /rewind goes back to any message."
)
NOTHING_LEFT_TO_UNDO = (
    "Nothing left to undo: every turn of this session that changed files is undone. "
    "/rewind goes back to any message."
)
NOTHING_TO_REDO = "Nothing to redo: /redo brings back what /undo took back."
REDO_DROPPED = (
    "Nothing to redo: files were changed by a turn or a /rewind since the /undo, so it "
    "cannot be brought back. /rewind goes back to any message."
)


@dataclass(frozen=True)
class Rewind:
    """A restore to prepare: the checkpoint rows from the target on, and the paths it covers
    (`only`; none: every path). `marks_undone`: the chain's turns are marked undone once it
    is applied (not by a redo)."""

    chain: list[Mapping[str, Any]]
    only: tuple[str, ...] = ()
    marks_undone: bool = True


@dataclass(frozen=True)
class Step:
    """One /undo or /redo ready to apply: the turn it steps over, and its plan."""

    turn: Mapping[str, Any]
    rewind: Rewind
    plan: RestorePlan


def turn_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The checkpoints turns took (not those a rewind or undo recorded)."""
    return [row for row in rows if row.get("kind", "turn") == "turn"]


def rewind_to_message(rows: Sequence[Mapping[str, Any]], message_id: int) -> Rewind | None:
    """Back to before the user message `message_id`: the first checkpoint from it on."""
    for index, row in enumerate(rows):
        linked = row.get("message_id")
        if row.get("kind", "turn") == "turn" and linked is not None and linked >= message_id:
            return Rewind(list(rows[index:]))
    return None


def undo_step(checkpointer: Checkpointer, rows: Sequence[Mapping[str, Any]]) -> Step | None:
    """The /undo to do now: the newest turn, not undone yet, whose changes are still there to
    take back (a turn that changed no file, or whose files are already as before it, is
    stepped over); None when no turn is left."""
    now = checkpointer.snapshot_now(
        "before a restore"  # pragma: no mutate (a label in the shadow's log)
    )
    repo = checkpointer.repo
    for index in reversed(range(len(rows))):
        row = rows[index]
        if row.get("kind", "turn") != "turn" or row.get("undone"):
            continue
        changed = repo.changes(row["before_ref"], row.get("after_ref") or now)
        if not changed:
            continue
        only = tuple(change.path for change in changed)
        chain = list(rows[index:])
        step_plan = plan_restore(repo, chain, now, only=only)
        if not step_plan.empty:
            return Step(row, Rewind(chain, only), step_plan)
    return None


def any_undone(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a turn of the session is undone (by /undo or /rewind)."""
    return any(row.get("kind", "turn") == "turn" and row.get("undone") for row in rows)


def redo_step(
    checkpointer: Checkpointer,
    rows: Sequence[Mapping[str, Any]],
    turn: Mapping[str, Any],
    undo_key: str,
    own: set[str],
) -> Step | None:
    """The /redo of `turn`, undone by the restore recorded as `undo_key`: what that undo
    wrote goes back as it was before it (an edit made outside since is a conflict, X2).

    None when the redo is gone, as in an editor: a turn changed files since the undo, or a
    restore other than the undos and redos in `own` (a /rewind) was recorded after it.
    """
    index = next((i for i, row in enumerate(rows) if row.get("key") == undo_key), None)
    if index is None:
        return None
    now = checkpointer.snapshot_now(
        "before a redo"  # pragma: no mutate (a label in the shadow's log)
    )
    repo = checkpointer.repo
    for row in rows[index + 1 :]:
        if row.get("kind", "turn") != "turn":
            if row.get("key") not in own:
                return None
        elif repo.changes(row["before_ref"], row.get("after_ref") or now):
            return None
    only = tuple(rows[index].get("paths") or ())
    chain = list(rows[index:])
    rewind = Rewind(chain, only, marks_undone=False)
    if not only:  # the undo wrote nothing: nothing to put back (and no `only` means all)
        return Step(turn, rewind, RestorePlan(chain[0]["before_ref"], now))
    return Step(turn, rewind, plan_restore(repo, chain, now, only=only))


def plan(checkpointer: Checkpointer, rewind: Rewind) -> RestorePlan:
    """What restoring would do now (to `rewind.only` alone, when it names paths)."""
    now = checkpointer.snapshot_now(
        "before a restore"  # pragma: no mutate (a label in the shadow's log)
    )
    return plan_restore(checkpointer.repo, rewind.chain, now, only=rewind.only)


def apply(
    checkpointer: Checkpointer,
    rewind: Rewind,
    restore_plan: RestorePlan,
    *,
    overwrite: bool,
    record: Callable[[dict[str, Any]], object],
    mark_undone: Callable[[str], object],
) -> RestoreResult:
    """Write the plan back (conflicts too when `overwrite`), and record it as a checkpoint
    of its own, so a later rewind counts what it wrote as the agent's, not as outside."""
    changes = restore_plan.restore + (restore_plan.conflicts if overwrite else [])
    result = apply_changes(checkpointer.repo, checkpointer.repo.workspace, changes)
    result.kept = [] if overwrite else [c.path for c in restore_plan.conflicts]
    result.kept += [c.path for c in restore_plan.unsupported]
    result.before = restore_plan.now
    result.after = checkpointer.snapshot_now(
        "after a restore"  # pragma: no mutate (a label in the shadow's log)
    )
    written = {c.path: c.new_blob for c in changes if c.path in set(result.restored)}
    result.key = uuid.uuid4().hex
    record(
        {"key": result.key, "kind": "restore", "before_ref": restore_plan.now,
         "after_ref": result.after, "paths": written,
         "workspace": str(checkpointer.repo.workspace)},
    )  # fmt: skip
    if rewind.marks_undone:
        for row in turn_rows(rewind.chain):
            if not row.get("undone"):
                mark_undone(row["key"])
    return result


def session_diff(checkpointer: Checkpointer, rows: Sequence[Mapping[str, Any]]) -> list[FileDiff]:
    """Every file that differs now from the session's first checkpoint, as diffs."""
    if not rows:
        return []
    repo = checkpointer.repo
    now = checkpointer.snapshot_now(
        "for /diff"  # pragma: no mutate (a label in the shadow's log)
    )
    changes = repo.changes(rows[0]["before_ref"], now)
    blobs = repo.read_blobs(
        blob for change in changes for blob in (change.old_blob, change.new_blob) if blob
    )
    return [
        _diff(change.path, _blob(blobs, change.old_blob), _blob(blobs, change.new_blob))
        for change in changes
    ]


def _blob(blobs: dict[str, bytes], name: str | None) -> bytes | None:
    """A side's content; None for the side where the file does not exist."""
    return blobs[name] if name else None  # read_blobs has each or raises


def _diff(path: str, old: bytes | None, new: bytes | None) -> FileDiff:
    """A file's diff; a binary or undecodable side is named, not shown."""
    texts = [_text(data) for data in (old, new)]
    if texts[0] is None or texts[1] is None:
        return FileDiff(path, "(a binary file changed)\n", 0, 0)
    return file_diff(texts[0], texts[1], path)


def _text(data: bytes | None) -> str | None:
    """A side as text ("" where the file does not exist); None for a binary one (a NUL in
    its first 8 KiB, or not UTF-8)."""
    if data is None:
        return ""
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode()  # UTF-8
    except UnicodeDecodeError:
        return None
