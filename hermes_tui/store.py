"""Opening the session store with the `storage:` settings of the user's config."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.config import Config
    from storage.db import SessionDB


async def open_store(config: Config) -> SessionDB:
    """Open the session database of config with its lock window and exit wait."""
    from storage.db import SessionDB

    return await SessionDB.open(
        config.db_path,
        lock_timeout=config.storage.lock_timeout_seconds,
        exit_wait=config.storage.exit_wait_seconds,
    )
