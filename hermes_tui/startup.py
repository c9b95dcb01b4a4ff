"""What the app shows once its store and agent are up: the panels filled, the notices a new
user needs first (a broken theme, a missing key), and the session asked for with --resume."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_tui.app import HermesApp


async def greet(app: HermesApp) -> None:
    """Fill the panels and say what needs saying before the first message."""
    from hermes_tui.commands.session import resume
    from hermes_tui.history import AgentRows, SessionHistory

    app.db.on_write_error = app.write_failed
    app.status.show_model()
    history = SessionHistory(app.db, lambda: app.agent.session_id)
    app.transcript.attach(history, AgentRows(app.agent.registry))
    search_key = app.keys.shown("sessions.search")
    app.sessions_panel.search_placeholder = f"search messages ({search_key})"
    app.sessions_panel.workspace = str(app.workspace)
    app.status.start()
    app.completion.start()
    await app.sessions.refresh()
    for notice in app.theme_notices:
        await app.notice(notice, "warning")
    no_key = app.agent.missing_key()
    if no_key is not None:
        await app.notice(no_key, "error")
    if app.resume_ref:
        await resume(app, app.resume_ref)
