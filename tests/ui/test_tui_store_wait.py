"""While another process holds the session database's lock, the working line says that the
turn waits for the database, not that the stream went silent (issue 29 item 10, L3, H7)."""

from __future__ import annotations

import dataclasses

from helpers import held_write_lock
from ui.tui_helpers import reply
from waits import wait_until

from agent.config import StorageSettings


async def test_the_working_line_names_the_locked_database(make_app, scripted_in_process):
    """L3: "waiting for the session database", never "stream silent", while a write waits."""
    server = scripted_in_process({"replies": [reply("saved at last")]})
    app = make_app(server)
    storage = StorageSettings(lock_timeout_seconds=30.0, exit_wait_seconds=20.0)
    app.config = dataclasses.replace(app.config, storage=storage)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        with held_write_lock(app.db.path) as release:
            await app.submit("please fix the bug")  # its session is created behind the lock
            await wait_until(
                pilot,
                lambda: "waiting for the session database" in app.working_line.text,
                what=lambda: f"the working line to name the database: {app.working_line.text!r}",
            )
            assert "stream silent" not in app.working_line.text
            await wait_until(
                pilot,
                lambda: "waiting for the session database" in app.status_panel.text,
                what="the status panel to name the database",
            )
            release.set()
            await app.wait_for_turn()
        await wait_until(pilot, lambda: not app.turns.busy, what="the turn to end")
        assert server.requests_for() != []
