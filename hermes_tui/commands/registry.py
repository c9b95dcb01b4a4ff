"""Slash commands as data: one table drives completion, /help and dispatch (U2).

A built-in command is an `async def name(ctx, argument)` registered with `@command(...)`;
`COMMANDS` lists them in the order they were registered, which is the order /help shows.

Commands that come and go while the app runs (custom command files, MCP prompts) come from
a `CommandSource` added to a `CommandTable`. A source's command never shadows a built-in nor
an earlier source's command of the same name: it then answers only to its qualified name,
`origin:name` (`/project:help`). Every source command also answers to that qualified name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from hermes_tui.commands.context import CommandContext

Handler = Callable[["CommandContext", str], Awaitable[None]]
ArgumentCompleter = Callable[["CommandContext", str], Sequence[str]]
"""Given the argument typed so far, the whole arguments it may complete to, best first."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """One slash command: what completion and /help show, and the handler that runs it.

    `origin` is "" for a built-in, else where the command comes from ("project", "user",
    an MCP server's name...); `arguments` completes its argument on Tab, when it can.
    """

    name: str
    args: str
    help: str
    run: Handler
    origin: str = ""
    arguments: ArgumentCompleter | None = None

    @property
    def usage(self) -> str:
        """`/name <args>` as shown in completion and /help."""
        return f"/{self.name} {self.args}".rstrip()

    @property
    def qualified(self) -> str:
        """`origin:name` for a source's command, the name for a built-in."""
        return f"{self.origin}:{self.name}" if self.origin else self.name


class CommandSource(Protocol):
    """Commands known at run time; asked on every lookup, so keep `commands()` cheap."""

    def commands(self) -> Sequence[SlashCommand]:
        """The commands this source offers now (each with its `origin` set)."""
        ...


COMMANDS: list[SlashCommand] = []
"""Every built-in command, in the order /help lists them."""


def command(
    name: str, args: str, help: str, *, arguments: ArgumentCompleter | None = None
) -> Callable[[Handler], Handler]:
    """Register the decorated `async def handler(ctx, argument)` as `/name`."""

    def register(handler: Handler) -> Handler:
        COMMANDS.append(SlashCommand(name, args, help, handler, arguments=arguments))
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


def split(text: str) -> tuple[str, str]:
    """`/name rest` -> (name in lower case, the rest stripped)."""
    head, _, rest = text.strip()[1:].partition(" ")
    return head.strip().lower(), rest.strip()


class CommandTable:
    """The built-ins and the commands of every added source, under the names they answer to."""

    def __init__(self, builtins: Sequence[SlashCommand] | None = None) -> None:
        self._builtins = COMMANDS if builtins is None else builtins
        self._sources: list[CommandSource] = []

    def add_source(self, source: CommandSource) -> None:
        """Offer `source`'s commands too; sources added earlier win a shared name."""
        self._sources.append(source)

    def entries(self) -> list[SlashCommand]:
        """Every command under the name it answers to, built-ins first (the /help order)."""
        taken = {entry.name for entry in self._builtins}
        out = list(self._builtins)
        for entry in self._source_commands():
            name = entry.name if entry.name not in taken else entry.qualified
            taken.add(name)
            out.append(entry if name == entry.name else replace(entry, name=name))
        return out

    def lookup(self, name: str) -> SlashCommand | None:
        """The command `name` runs: a shown name, or a source command's qualified name."""
        for entry in self.entries():
            if entry.name == name:
                return entry
        for entry in self._source_commands():
            if entry.qualified == name:
                return entry
        return None

    def parse(self, text: str) -> ParsedCommand:
        """Split `/name rest` into the command and its argument text."""
        name, argument = split(text)
        return ParsedCommand(name=name, argument=argument, command=self.lookup(name))

    def complete(self, text: str) -> list[SlashCommand]:
        """Commands matching what is typed so far; empty once arguments are being typed."""
        stripped = text.lstrip()
        if not stripped.startswith("/") or " " in stripped or "\n" in stripped:
            return []
        prefix = stripped[1:].lower()
        return [entry for entry in self.entries() if entry.name.startswith(prefix)]

    async def run(self, ctx: CommandContext, text: str) -> None:
        """Dispatch a slash command; unknown ones are reported, never sent to the model."""
        from storage.errors import StorageError, sentence  # loaded with the agent by now

        parsed = self.parse(text)
        if parsed.command is None:
            await ctx.notice(f"Unknown command /{parsed.name}: /help lists the commands.", "error")
            return
        try:
            await parsed.command.run(ctx, parsed.argument)
        except StorageError as exc:
            await ctx.notice(sentence(exc), "error")

    def _source_commands(self) -> Iterable[SlashCommand]:
        for source in self._sources:
            yield from source.commands()


BUILTIN_TABLE = CommandTable()
"""The built-in commands alone (a context without a table of its own uses this one)."""


def table_of(ctx: object) -> CommandTable:
    """The command table `ctx` dispatches through."""
    table = getattr(ctx, "command_table", None)
    return table if isinstance(table, CommandTable) else BUILTIN_TABLE


def parse(text: str) -> ParsedCommand:
    """Split `/name rest` into a built-in command and its argument text."""
    return BUILTIN_TABLE.parse(text)


def complete(text: str) -> list[SlashCommand]:
    """Built-in commands matching what is typed so far."""
    return BUILTIN_TABLE.complete(text)


async def run(ctx: CommandContext, text: str) -> None:
    """Dispatch a slash command through `ctx`'s table (the built-ins when it has none)."""
    await table_of(ctx).run(ctx, text)
