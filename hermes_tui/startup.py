"""What the app shows once its store and agent are up: the panels filled, the notices a new
user needs first (a broken theme, a missing key), and the session asked for with --resume."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hermes_tui.commands.context import CommandContext
from hermes_tui.doors import started
from hermes_tui.welcome_facts import welcome_facts

if TYPE_CHECKING:
    from hermes_tui.widgets.sessions_panel import SessionsPanel
    from hermes_tui.widgets.transcript import Transcript


class StartupHost(CommandContext, Protocol):
    """What the greeting uses of the app: a command's parts (it resumes as /resume does),
    the transcript and the sessions panel it fills, and what the user asked for."""

    workspace: Path
    resume_ref: str | None
    theme_notices: list[str]

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel widget."""
        ...

    def write_failed(self, reason: str) -> None:
        """A database write failed (on the app loop)."""
        ...


async def greet(app: StartupHost) -> None:
    """Fill the panels and say what needs saying before the first message."""
    from hermes_tui.commands.session import resume
    from hermes_tui.history import AgentRows, SessionHistory

    db, agent = started(app.db, "session store"), started(app.agent, "agent")
    db.on_write_error = app.write_failed
    app.status.show_model()
    history = SessionHistory(db, lambda: agent.session_id)
    app.transcript.attach(history, AgentRows(agent.registry))
    search_key = app.keys.shown("sessions.search")
    app.sessions_panel.search_placeholder = f"search messages ({search_key})"
    app.sessions_panel.workspace = str(app.workspace)
    app.status.start()
    app.completion.start()
    if not app.resume_ref:  # a resumed session's history takes the welcome's place
        await app.transcript.show_welcome(welcome_facts(app))
    await app.sessions.refresh()
    for notice in app.theme_notices:
        await app.notice(notice, "warning")
    no_key = agent.missing_key()
    if no_key is not None:
        await app.notice(no_key, "error")
    if app.resume_ref:
        await resume(app, app.resume_ref)
