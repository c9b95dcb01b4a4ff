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

for _handlers in ("turn", "session", "mcp", "ui"):  # registered (and in /help) in this order
    import_module(f"hermes_tui.commands.{_handlers}")

from hermes_tui.commands.mcp import McpPrompts  # noqa: E402 (after the handlers it joins)


def table_for(app: object) -> CommandTable:
    """The app's command table: the built-ins and the prompts of its MCP servers."""
    table = CommandTable()
    table.add_source(McpPrompts(app))
    return table


__all__ = [
    "COMMANDS",
    "CommandSource",
    "CommandTable",
    "McpPrompts",
    "ParsedCommand",
    "SlashCommand",
    "command",
    "complete",
    "is_command",
    "parse",
    "run",
    "table_for",
    "table_of",
]
