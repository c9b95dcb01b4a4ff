"""What keeps the agent's changes undoable and confined: its checkpoints and its sandbox."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent import events as ev
from agent.config import Config

NO_GIT = (
    "No checkpoints: there is no `git` binary, so /undo and /rewind cannot restore files; "
    "install git to have them."
)

if TYPE_CHECKING:
    from agent.checkpoints.checkpointer import Checkpointer
    from agent.ports import SessionStore
    from agent.tools.registry import ToolRegistry
    from agent.tools.sandbox import Sandbox


def decide_sandbox(config: Config, registry: ToolRegistry) -> Sandbox:
    """How run_shell is confined in this run; its description tells the model (X3)."""
    from agent.tools import shell
    from agent.tools.hiding import Hiding
    from agent.tools.sandbox import Sandbox

    # Commands see neither the app's homes nor the user's credential places (H9).
    hiding = Hiding(config.app_homes, config.sandbox_hide, config.sandbox_allow_read)
    sandbox = Sandbox.decide(
        config.sandbox,
        network=config.shell.network,
        unix_sockets=config.shell.unix_sockets,
        hiding=hiding,
    )
    tool = registry.get("run_shell")
    if tool is not None:
        # A copy: the built-in Tool objects are shared by every registry in the process.
        registry.register(replace(tool, description=shell.describe(sandbox)))
    return sandbox


def make_checkpointer(
    config: Config, workspace: Path, store: SessionStore | None, sink: ev.Sink
) -> Checkpointer | None:
    """The workspace's checkpoints (X2), or None when they are off or git is missing."""
    from agent.checkpoints.checkpointer import Checkpointer
    from agent.checkpoints.shadow import git_available

    settings = config.checkpoints
    if not settings.enabled:
        return None
    if not git_available():
        sink(ev.Notice(NO_GIT, "warning"))
        return None

    def record(session_id: str, row: dict[str, Any]) -> None:
        if store is not None:
            store.enqueue_checkpoint(session_id, row)

    def update(session_id: str, key: str, fields: dict[str, Any]) -> None:
        if store is not None:
            store.enqueue_checkpoint_update(session_id, key, **fields)

    return Checkpointer.for_workspace(
        workspace,
        config.home,
        lambda text, level: sink(ev.Notice(text, level)),
        record=record,
        update=update,
        max_file_bytes=int(settings.max_file_mb * 1024 * 1024),
    )
