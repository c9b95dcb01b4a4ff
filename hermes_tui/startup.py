"""What the app shows once its store and agent are up: the panels filled, the notices a new
user needs first (a broken theme, a missing key), and the session asked for with --resume."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_tui.app import HermesApp
    from hermes_tui.widgets.welcome import WelcomeFacts


def welcome_facts(app: HermesApp) -> WelcomeFacts:
    """What the welcome of an empty session names, read from the app as it is now."""
    from agent.config import DEMO_PROVIDER
    from agent.homes import tilde
    from hermes_tui.widgets.welcome import WelcomeFacts

    config, agent = app.config, app.agent
    if config.demo and agent.provider_name == DEMO_PROVIDER:
        hint = config.setup_hint
    else:
        hint = f"Providers and models are set in {tilde(config.config_path)}; /model switches."
    return WelcomeFacts(
        model=agent.model_ref,
        workspace=tilde(app.workspace),
        mode=str(config.agent.approval),
        sandbox=agent.sandbox.panel_label(),
        provider_hint=hint,
        send_key="enter",
        stop_key=app.keys.shown("turn.stop"),
        help_key=app.keys.shown("app.help"),
    )


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
    if not app.resume_ref:  # a resumed session's history takes the welcome's place
        await app.transcript.show_welcome(welcome_facts(app))
    await app.sessions.refresh()
    for notice in app.theme_notices:
        await app.notice(notice, "warning")
    no_key = app.agent.missing_key()
    if no_key is not None:
        await app.notice(no_key, "error")
    if app.resume_ref:
        await resume(app, app.resume_ref)
