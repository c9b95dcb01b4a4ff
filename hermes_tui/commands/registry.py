"""Slash commands as data: one table drives completion, /help and dispatch (U2).

A command is an `async def name(ctx, argument)` registered with `@command(...)`; the table
lists them in the order they were registered, which is the order /help shows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_tui.commands.context import CommandContext

Handler = Callable[["CommandContext", str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One slash command: what completion and /help show, and the handler that runs it."""

    name: str
    args: str
    help: str
    run: Handler

    @property
    def usage(self) -> str:
        """`/name <args>` as shown in completion and /help."""
        return f"/{self.name} {self.args}".rstrip()


COMMANDS: list[SlashCommand] = []
"""Every command, in the order /help lists them."""
_BY_NAME: dict[str, SlashCommand] = {}


def command(name: str, args: str, help: str) -> Callable[[Handler], Handler]:
    """Register the decorated `async def handler(ctx, argument)` as `/name`."""

    def register(handler: Handler) -> Handler:
        entry = SlashCommand(name, args, help, handler)
        COMMANDS.append(entry)
        _BY_NAME[name] = entry
        return handler

    return register


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
    return [entry for entry in COMMANDS if entry.name.startswith(prefix)]


async def run(ctx: CommandContext, text: str) -> None:
    """Dispatch a slash command from the table; unknown ones are reported, never sent."""
    from storage.errors import StorageError, sentence  # loaded with the agent by now

    parsed = parse(text)
    if parsed.command is None:
        await ctx.notice(f"Unknown command /{parsed.name}: /help lists the commands.", "error")
        return
    try:
        await parsed.command.run(ctx, parsed.argument)
    except StorageError as exc:
        await ctx.notice(sentence(exc), "error")
