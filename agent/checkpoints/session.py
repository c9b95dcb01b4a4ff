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

NOTHING_TO_UNDO = "Nothing to undo: no turn of this session has changed a file."


@dataclass(frozen=True)
class Rewind:
    """A restore to prepare: the checkpoint rows from the target on, and the paths it covers."""

    chain: list[Mapping[str, Any]]
    only: tuple[str, ...] = ()
    undo: bool = False


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


def last_turn(rows: Sequence[Mapping[str, Any]]) -> Rewind | None:
    """The last turn that changed something and is not undone yet, for /undo."""
    for index in reversed(range(len(rows))):
        row = rows[index]
        if row.get("kind", "turn") == "turn" and not row.get("undone"):
            return Rewind(list(rows[index:]), undo=True)
    return None


def plan(checkpointer: Checkpointer, rewind: Rewind) -> RestorePlan:
    """What restoring would do now (a /undo: only to what its turn changed)."""
    now = checkpointer.snapshot_now(
        "before a restore"  # pragma: no mutate (a label in the shadow's log)
    )
    repo = checkpointer.repo
    only: Sequence[str] = rewind.only
    if rewind.undo:
        row = rewind.chain[0]
        end = row.get("after_ref") or now
        only = [change.path for change in repo.changes(row["before_ref"], end)]
        if not only:
            return RestorePlan(row["before_ref"], now)
    return plan_restore(repo, rewind.chain, now, only=only)


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
    record(
        {"key": uuid.uuid4().hex, "kind": "restore", "before_ref": restore_plan.now,
         "after_ref": result.after, "paths": written,
         "workspace": str(checkpointer.repo.workspace)},
    )  # fmt: skip
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
