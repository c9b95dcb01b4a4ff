"""What a slash command can reach: a few parts of the app, so a handler can be tested alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from hermes_tui.doors import Notices, ShowsScreens

if TYPE_CHECKING:
    from agent.config import Config
    from agent.loop import Agent
    from hermes_tui.changes import ChangesController
    from hermes_tui.commands.registry import CommandTable
    from hermes_tui.completion.controller import CompletionController
    from hermes_tui.keys import KeyMap
    from hermes_tui.modes import ModeController
    from hermes_tui.probes import Probes
    from hermes_tui.runtime import Runtime
    from hermes_tui.sessions import SessionsController
    from hermes_tui.status import StatusPresenter
    from hermes_tui.theming import AppThemes
    from hermes_tui.turns import TurnController
    from storage.db import SessionDB


class CommandContext(Notices, ShowsScreens, Protocol):
    """The parts of the app a command uses; HermesApp is one, a test builds a small one."""

    config: Config
    agent: Agent | None
    """None until the app's start (a command runs after it)."""
    db: SessionDB | None
    turns: TurnController
    sessions: SessionsController
    status: StatusPresenter
    keys: KeyMap
    modes: ModeController
    themes: AppThemes
    runtime: Runtime | None
    """The running parts (its `mcp`: the MCP servers, or None)."""
    probes: Probes
    """The clocks (a test's fixed wall clock dates `/usage`)."""

    # Built on first use (after the first frame): read-only, as a cached property is.
    @property
    def changes(self) -> ChangesController:
        """/undo, /rewind and the diff of a turn's changes."""
        ...

    @property
    def command_table(self) -> CommandTable:
        """The slash commands."""
        ...

    @property
    def completion(self) -> CompletionController:
        """The composer's completion."""
        ...

    async def show_help(self) -> None:
        """Open the help screen."""
        ...

    async def action_quit(self) -> None:
        """Quit (after a bounded wait for queued writes)."""
        ...
