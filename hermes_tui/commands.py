"""Slash commands as data: one table drives completion, /help and dispatch (U2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One slash command: `handler` names the `HermesApp` method that runs it."""

    name: str
    args: str
    help: str
    handler: str

    @property
    def usage(self) -> str:
        """`/name <args>` as shown in completion and /help."""
        return f"/{self.name} {self.args}".rstrip()


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("steer", "<text>", "Guide the running turn (sent as text)", "command_steer"),
    SlashCommand(
        "queue", "<text> | rm N | edit N | resume", "Queue text, or edit the queue", "command_queue"
    ),
    SlashCommand("stop", "", "Stop the running turn (the queue pauses)", "command_stop"),
    SlashCommand("redirect", "<text>", "Interrupt with a correction", "command_redirect"),
    SlashCommand("compact", "[focus]", "Summarise older messages for the model", "command_compact"),
    SlashCommand("new", "", "Start a new session", "command_new"),
    SlashCommand("resume", "<id|title>", "Resume a stored session", "command_resume"),
    SlashCommand("continue", "", "Finish a turn cut off when the app stopped", "command_continue"),
    SlashCommand("sessions", "", "Show and focus the sessions panel", "command_sessions"),
    SlashCommand("model", "[provider:model]", "Show or switch the model", "command_model"),
    SlashCommand("title", "<text>", "Rename the current session", "command_title"),
    SlashCommand("theme", "[name]", "List the themes or switch theme", "command_theme"),
    SlashCommand("help", "", "Show commands and keys", "command_help"),
    SlashCommand("quit", "", "Quit hermes-tui", "command_quit"),
)

_BY_NAME = {command.name: command for command in COMMANDS}


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """The result of parsing a `/name args` line; `command` is None for an unknown name."""

    name: str
    argument: str
    command: SlashCommand | None


def is_command(text: str) -> bool:
    """True when `text` is a slash command line (it never goes to the model)."""
    return text.lstrip().startswith("/")


def parse(text: str) -> ParsedCommand:
    """Split `/name rest` into the command and its argument text."""
    head, _, rest = text.strip()[1:].partition(" ")
    name = head.strip().lower()
    return ParsedCommand(name=name, argument=rest.strip(), command=_BY_NAME.get(name))


def complete(text: str) -> list[SlashCommand]:
    """Commands matching what is typed so far; empty once arguments are being typed."""
    stripped = text.lstrip()
    if not stripped.startswith("/") or " " in stripped or "\n" in stripped:
        return []
    prefix = stripped[1:].lower()
    return [command for command in COMMANDS if command.name.startswith(prefix)]
