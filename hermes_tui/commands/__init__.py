"""Slash commands: the table (registry.py) and the handlers that fill it."""

from importlib import import_module

from hermes_tui.commands.registry import (
    COMMANDS,
    ParsedCommand,
    SlashCommand,
    command,
    complete,
    is_command,
    parse,
    run,
)

for _handlers in (
    "turn",
    "session",
    "changes",
    "ui",
):  # registered, and so listed by /help, in this order
    import_module(f"hermes_tui.commands.{_handlers}")

__all__ = [
    "COMMANDS",
    "ParsedCommand",
    "SlashCommand",
    "command",
    "complete",
    "is_command",
    "parse",
    "run",
]
