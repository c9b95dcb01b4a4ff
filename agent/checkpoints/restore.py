"""Restoring the workspace to a checkpoint: what to write back, and what was edited outside.

A checkpoint's turn changed files, and so may the user between turns or during one. Every
path that differs from the checkpoint is written back, except those changed outside the
agent since: those are conflicts, kept unless the user confirms (X2). The agent's changes
are what a turn's snapshots show it changed (its file tools' paths, or anything when it ran
a shell command); everything between one turn's end and the next checkpoint is outside.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.checkpoints.shadow import Change, ShadowRepo
from agent.tools import paths
from agent.tools.registry import ToolError, describe_os_error

FILE_MODES = ("100644", "100755")
"""The tree modes a restore writes: regular files, plain and executable."""


@dataclass
class RestorePlan:
    """What restoring `target` (a commit) would do to the workspace as it is `now`."""

    target: str
    now: str
    restore: list[Change] = field(default_factory=list)
    conflicts: list[Change] = field(default_factory=list)
    unsupported: list[Change] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing differs from the checkpoint."""
        return not (self.restore or self.conflicts or self.unsupported)


@dataclass
class RestoreResult:
    """What a restore did: paths written back or removed, kept, and failed (with why);
    `key` is the checkpoint row it recorded."""

    restored: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    before: str = ""
    after: str | None = None
    key: str = ""


def outside_changes(repo: ShadowRepo, chain: Sequence[Mapping[str, Any]], now: str) -> set[str]:
    """Paths changed outside the agent from the first checkpoint of `chain` until `now`."""
    outside: set[str] = set()
    for index, row in enumerate(chain):
        following = chain[index + 1]["before_ref"] if index + 1 < len(chain) else now
        after = row.get("after_ref")
        if after is None:
            # Its end was never recorded (the app stopped mid-turn): nothing tells the agent's
            # changes apart, so none are taken for the agent's.
            outside |= {c.path for c in repo.changes(row["before_ref"], following)}
            continue
        if not row.get("shell"):
            # What the file tools wrote is known to the blob: anything else is outside.
            writes = row.get("paths") or {}
            outside |= {
                c.path
                for c in repo.changes(row["before_ref"], after)
                if c.path not in writes or writes[c.path] != c.new_blob
            }
        outside |= {c.path for c in repo.changes(after, following)}
    return outside


def plan_restore(
    repo: ShadowRepo, chain: Sequence[Mapping[str, Any]], now: str, *, only: Sequence[str] = ()
) -> RestorePlan:
    """Restoring the workspace `now` to the first checkpoint of `chain` (`only`: these paths)."""
    target = chain[0]["before_ref"]
    plan = RestorePlan(target, now)
    outside = outside_changes(repo, chain, now)
    for change in repo.changes(now, target, only):
        if not _supported(change):
            plan.unsupported.append(change)
        elif change.path in outside:
            plan.conflicts.append(change)
        else:
            plan.restore.append(change)
    return plan


def _supported(change: Change) -> bool:
    """Regular files only: a link or a submodule is never written by a restore."""
    return all(mode in (*FILE_MODES, "000000") for mode in (change.old_mode, change.new_mode))


def apply_changes(repo: ShadowRepo, workspace: Path, changes: Sequence[Change]) -> RestoreResult:
    """Write each change's checkpoint side into the workspace, through the confined paths."""
    result = RestoreResult()
    blobs = repo.read_blobs(c.new_blob for c in changes if c.new_blob is not None)
    for change in changes:
        try:
            if change.new_blob is None:
                _remove(workspace, change.path)
            else:
                executable = change.new_mode == "100755"
                _write(workspace, change.path, blobs[change.new_blob], executable)
        except (ToolError, OSError) as exc:
            reason = str(exc) if isinstance(exc, ToolError) else describe_os_error(exc)
            result.failed.append((change.path, reason))
            continue
        result.restored.append(change.path)
    return result


def _write(workspace: Path, rel: str, data: bytes, executable: bool) -> None:
    target = paths.resolve(workspace, rel)
    target.refuse_links(rel)
    paths.write_bytes(target, data, executable=executable)


def _remove(workspace: Path, rel: str) -> None:
    target = paths.resolve(workspace, rel)
    target.refuse_links(rel)
    if target.final is None:
        return
    if not target.final.is_file:
        raise ToolError(f"{rel} is no longer a regular file; it was left as it is.")
    paths.remove_file(target)
