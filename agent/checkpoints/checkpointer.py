"""Checkpoints, always on: the workspace before the first change of every turn (X2).

A snapshot starts on a thread of its own when a turn starts, so it runs while the model
streams; the turn's first change (a write, an edit or a shell command) waits for it and
records it, linked to the turn's user message. At the turn's end a second snapshot records
what the turn left, which tells a later rewind the agent's changes from edits made outside it.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.checkpoints.shadow import DEFAULT_MAX_FILE_BYTES, ShadowError, ShadowRepo
from agent.tools import paths
from agent.tools.registry import ToolError

log = logging.getLogger("hermes_tui.agent")

Notify = Callable[[str, str], None]
"""Tells the user one sentence (text, level)."""
OPAQUE_KINDS = frozenset({"shell", "mcp"})
"""Tools that can change anything, unseen: a shell command, an MCP server's tool (a local
server writes files as the user). Their turns are recorded as `shell` ones: what changed
cannot be told apart from edits made outside the agent."""


@dataclass
class TurnCheckpoint:
    """The running turn's checkpoint: its key, commit, and what the turn changed so far.

    `writes` maps each path the file tools wrote to the blob id of what they wrote: a later
    snapshot that shows other content there shows an edit made outside the agent.
    """

    key: str
    session_id: str
    before: str
    shell: bool = False
    writes: dict[str, str | None] = field(default_factory=dict)
    message: Any = None
    """The user message, while its row id was not known when the checkpoint was recorded."""


def blob_id(data: bytes) -> str:
    """The git blob id of `data` (no filter or conversion applies in the shadow repository)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Checkpointer:
    """Takes and records one workspace's checkpoints, off the agent's and the UI's threads."""

    def __init__(
        self,
        repo: ShadowRepo,
        notify: Notify,
        *,
        record: Callable[[str, dict[str, Any]], None],
        update: Callable[[str, str, dict[str, Any]], None],
    ) -> None:
        self.repo = repo
        self._notify = notify
        self._record = record
        self._update = update
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="checkpoints")
        self._pending: concurrent.futures.Future[str | None] | None = None
        self._session_id: str | None = None
        self._message: Any = None
        self._turn: TurnCheckpoint | None = None
        self._failed = False
        self._lock = threading.Lock()
        self.last_snapshot_ms: float | None = None

    @classmethod
    def for_workspace(
        cls,
        workspace: Path,
        home: Path,
        notify: Notify,
        *,
        record: Callable[[str, dict[str, Any]], None],
        update: Callable[[str, str, dict[str, Any]], None],
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> Checkpointer:
        """The checkpointer of `workspace`, its shadow repository under `home/checkpoints`."""
        repo = ShadowRepo(
            workspace, home / "checkpoints", max_file_bytes=max_file_bytes, never=[home]
        )
        return cls(repo, notify, record=record, update=update)

    # -- a turn -------------------------------------------------------------------------------
    def begin_turn(self, session_id: str | None, message: Any) -> None:
        """A turn starts: snapshot the workspace in the background; `message` caused it."""
        with self._lock:
            self._session_id, self._message, self._turn = session_id, message, None
            # Most turns find the workspace as the last one left it: said by its stamp at
            # once, without a thread's or a process's work alongside the turn.
            tree = self.repo.unchanged_tree("before a turn")
            if tree is not None:
                self._pending = concurrent.futures.Future()
                self._pending.set_result(tree)
            else:
                self._pending = self._pool.submit(self._snapshot, "before a turn")

    def before_change(self, kind: str, path: str | None = None) -> None:
        """A tool is about to change the workspace: the turn's first change records the
        checkpoint (waiting for its snapshot); a shell command or an MCP tool is noted."""
        with self._lock:
            turn = self._turn or self._start_checkpoint(kind)
            if turn is not None and kind in OPAQUE_KINDS:
                turn.shell = True

    def after_change(self, kind: str, path: str | None = None) -> None:
        """A file tool wrote `path`: what it wrote is the agent's (X2)."""
        with self._lock:
            turn = self._turn
            if turn is None or kind in OPAQUE_KINDS or not path:
                return
            try:
                # Through the tools' checked descriptors: a FIFO or a link swapped in since
                # the write is not read (a FIFO would block the turn).
                data = paths.read_bytes(paths.resolve(self.repo.workspace, path))
                turn.writes[path] = blob_id(data)
            except (OSError, ToolError):
                turn.writes[path] = None

    def _start_checkpoint(self, kind: str) -> TurnCheckpoint | None:
        pending, self._pending = self._pending, None
        if pending is None or self._session_id is None:
            return None
        commit = pending.result()
        if commit is not None and kind in OPAQUE_KINDS:
            # A shell command (or an MCP tool) can change anything: the snapshot is taken
            # right before it, so nothing edited while the model streamed is taken for its
            # doing.
            commit = self._snapshot(f"before a {kind} tool")
        if commit is None:
            return None
        turn = TurnCheckpoint(uuid.uuid4().hex, self._session_id, commit)
        self._turn = turn
        message_id = getattr(self._message, "db_id", None)
        if message_id is None:
            # Its row is still queued (a busy database): linked when the turn ends.
            turn.message = self._message
        self._record(
            turn.session_id,
            {"key": turn.key, "message_id": message_id, "before_ref": commit,
             "workspace": str(self.repo.workspace)},
        )  # fmt: skip
        return turn

    def end_turn(self) -> None:
        """The turn ended: if it changed anything, record what it left.

        In the background after file tools alone (what they wrote is known, so an edit made
        meanwhile still shows as outside); before the turn ends after a shell command.
        """
        with self._lock:
            turn, self._turn, self._pending = self._turn, None, None
        if turn is not None:
            finishing = self._pool.submit(self._finish, turn)
            if turn.shell:
                finishing.result()

    def _finish(self, turn: TurnCheckpoint) -> None:
        after = self._snapshot("after a turn")
        fields: dict[str, Any] = {"shell": turn.shell, "paths": turn.writes}
        late_id = getattr(turn.message, "db_id", None)
        if late_id is not None:
            fields["message_id"] = late_id
        if after is not None:
            fields["after_ref"] = after
        self._update(turn.session_id, turn.key, fields)

    # -- snapshots ---------------------------------------------------------------------------
    def _snapshot(self, why: str) -> str | None:
        """A snapshot now, or None (said once) when the shadow repository fails."""
        started = time.perf_counter()
        try:
            commit, skipped = self.repo.snapshot(why)
        except (ShadowError, OSError) as exc:
            log.warning("checkpoint failed: %s", exc)
            if not self._failed:
                self._failed = True
                self._notify(
                    f"No checkpoint: {exc} /undo and /rewind cannot restore it.", "warning"
                )
            return None
        self.last_snapshot_ms = (time.perf_counter() - started) * 1000
        if skipped:
            self._notify(skipped_sentence(skipped, self.repo.max_file_bytes), "warning")
        return commit

    def snapshot_now(self, why: str) -> str:
        """A snapshot taken after every background one; raises ShadowError on failure."""
        self.idle()
        commit, skipped = self._pool.submit(self.repo.snapshot, why).result()
        if skipped:
            self._notify(skipped_sentence(skipped, self.repo.max_file_bytes), "warning")
        return commit

    def idle(self) -> None:
        """Wait until every background snapshot has been taken and recorded."""
        self._pool.submit(lambda: None).result()

    def close(self) -> None:
        """Finish the background work and stop its thread."""
        self._pool.shutdown(wait=True)


def skipped_sentence(paths: list[str], cap: int) -> str:
    """The one sentence about files too large to checkpoint."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    size = f"{cap / 2**20:g} MB" if cap >= 2**20 else f"{max(cap // 1024, 1)} KB"
    left = "it as it is" if len(paths) == 1 else "them as they are"
    return f"Not checkpointed (over {size}): {shown}; /undo and /rewind leave {left}."
