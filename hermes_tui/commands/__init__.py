"""Slash commands: the table (registry.py) and the handlers that fill it."""

from hermes_tui.commands.registry import (
    COMMANDS,
    CommandSource,
    CommandTable,
    ParsedCommand,
    SlashCommand,
    command,
    complete,
    is_command,
    parse,
    run,
    table_of,
)

# The handler modules register their commands as they are imported, and /help lists them in
# that order: kept by hand, so the sorter stays out of this block.
# isort: off
from hermes_tui.commands import turn  # noqa: F401
from hermes_tui.commands import session  # noqa: F401
from hermes_tui.commands import changes  # noqa: F401
from hermes_tui.commands import project  # noqa: F401
from hermes_tui.commands import budget  # noqa: F401
from hermes_tui.commands import mcp  # noqa: F401
from hermes_tui.commands import processes  # noqa: F401
from hermes_tui.commands import agents  # noqa: F401
from hermes_tui.commands import ui  # noqa: F401
# isort: on

from hermes_tui.commands.custom import CustomCommandSource, custom_table
from hermes_tui.commands.mcp import McpPrompts


def table_for(app: object) -> CommandTable:
    """The app's command table: the built-ins, the command files, then the prompts of its
    MCP servers (a later source never shadows an earlier one)."""
    table = custom_table(app)
    table.add_source(McpPrompts(app))
    return table


__all__ = [
    "COMMANDS",
    "CommandSource",
    "CommandTable",
    "CustomCommandSource",
    "McpPrompts",
    "ParsedCommand",
    "SlashCommand",
    "command",
    "complete",
    "custom_table",
    "is_command",
    "parse",
    "run",
    "table_for",
    "table_of",
]
