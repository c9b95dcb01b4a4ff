"""What a slash command can reach: a few parts of the app, so a handler can be tested alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent.config import Config
    from hermes_tui.changes import ChangesController
    from hermes_tui.commands.registry import CommandTable
    from hermes_tui.completion.controller import CompletionController
    from hermes_tui.keys import KeyMap
    from hermes_tui.modes import ModeController
    from hermes_tui.sessions import SessionsController
    from hermes_tui.status import StatusPresenter
    from hermes_tui.theming import AppThemes
    from hermes_tui.turns import TurnController


class CommandContext(Protocol):
    """The parts of the app a command uses; HermesApp is one, a test builds a small one."""

    config: Config
    agent: Any
    db: Any
    changes: ChangesController
    turns: TurnController
    sessions: SessionsController
    status: StatusPresenter
    keys: KeyMap
    modes: ModeController
    themes: AppThemes
    command_table: CommandTable
    runtime: Any
    """The running parts (its `mcp` is the McpManager, or None)."""
    completion: CompletionController

    async def notice(self, text: str, level: str = "info") -> None:
        """A one-line notice in the transcript."""
        ...

    async def show_help(self) -> None:
        """Open the help screen."""
        ...

    async def push_screen(self, screen: Any) -> Any:
        """Show a screen (a panel) over the app."""
        ...

    async def action_quit(self) -> None:
        """Quit (after a bounded wait for queued writes)."""
        ...
