"""Opening the session store with the `storage:` settings of the user's config."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from agent.config import Config
    from storage.db import SessionDB

NOTHING_TO_CONTINUE = (
    "No session to continue in this folder: start one with hermes-tui, or "
    'hermes-tui run "task" (hermes-tui sessions list shows every folder\'s).'
)


async def open_store(config: Config) -> SessionDB:
    """Open the session database of config with its lock window and exit wait."""
    from storage.db import SessionDB

    return await SessionDB.open(
        config.db_path,
        lock_timeout=config.storage.lock_timeout_seconds,
        exit_wait=config.storage.exit_wait_seconds,
    )


async def latest_session_here(config: Config, workspace: Path) -> str | None:
    """The id of the session last updated in `workspace` (`--continue`), or None."""
    db = await open_store(config)
    try:
        session = await db.latest_session_in(str(workspace))
    finally:
        await db.close()
    return session["id"] if session else None
