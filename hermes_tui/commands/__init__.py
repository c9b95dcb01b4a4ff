"""Slash commands: the table (registry.py) and the handlers that fill it."""

from importlib import import_module

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

for _handlers in (
    "turn",
    "session",
    "changes",
    "project",
    "mcp",
    "ui",
):  # registered, and so listed by /help, in this order
    import_module(f"hermes_tui.commands.{_handlers}")

from hermes_tui.commands.custom import CustomCommandSource, custom_table  # noqa: E402
from hermes_tui.commands.mcp import McpPrompts  # noqa: E402 (after the handlers it joins)


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
