"""What the welcome of an empty session names (the model, the folder, the mode, the
sandbox, how to set up a provider and three keys), read from the app as it is now."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hermes_tui.doors import started

if TYPE_CHECKING:
    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.keys import KeyMap
    from hermes_tui.modes import ModeController
    from hermes_tui.widgets.welcome import WelcomeFacts


class WelcomeHost(Protocol):
    """What the welcome reads of the app: the config, the agent (after the start), the
    folder, the mode in use and the keys it names."""

    config: Config
    agent: Agent | None
    workspace: Path
    modes: ModeController
    keys: KeyMap


def welcome_facts(app: WelcomeHost) -> WelcomeFacts:
    """What the welcome of an empty session names, read from the app as it is now."""
    from agent.config import DEMO_PROVIDER
    from agent.homes import tilde
    from hermes_tui.widgets.welcome import WelcomeFacts

    config, agent = app.config, started(app.agent, "agent")
    if config.demo and agent.provider_name == DEMO_PROVIDER:
        hint = config.setup_hint
    else:
        hint = f"Providers and models are set in {tilde(config.config_path)}; /model switches."
    return WelcomeFacts(
        model=agent.model_ref,
        workspace=tilde(app.workspace),
        mode=str(app.modes.current),
        sandbox=agent.sandbox.panel_label(),
        provider_hint=hint,
        send_key="enter",
        stop_key=app.keys.shown("turn.stop"),
        help_key=app.keys.shown("app.help"),
    )
