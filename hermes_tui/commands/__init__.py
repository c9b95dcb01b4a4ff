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
    "ui",
):  # registered, and so listed by /help, in this order
    import_module(f"hermes_tui.commands.{_handlers}")

from hermes_tui.commands.custom import CustomCommandSource, custom_table  # noqa: E402

__all__ = [
    "COMMANDS",
    "CommandSource",
    "CommandTable",
    "CustomCommandSource",
    "ParsedCommand",
    "SlashCommand",
    "command",
    "complete",
    "custom_table",
    "is_command",
    "parse",
    "run",
    "table_of",
]
