"""The dynamic command seam: sources add commands that never shadow a built-in (U2, P3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_tui import commands
from hermes_tui.commands import CommandTable, SlashCommand


@dataclass
class ListSource:
    """A source whose commands a test sets."""

    entries: list[SlashCommand] = field(default_factory=list)

    def commands(self) -> list[SlashCommand]:
        return self.entries


def dynamic(name: str, origin: str, ran: list[tuple[str, str]]) -> SlashCommand:
    async def run(ctx, argument: str) -> None:
        ran.append((f"{origin}:{name}", argument))

    return SlashCommand(name, "[args]", f"{origin} {name}", run, origin=origin)


class Context:
    def __init__(self, table: CommandTable) -> None:
        self.command_table = table
        self.notices: list[tuple[str, str]] = []

    async def notice(self, text: str, level: str = "info") -> None:
        self.notices.append((text, level))


async def test_a_source_command_runs_and_a_shadowing_one_answers_only_to_its_qualified_name():
    ran: list[tuple[str, str]] = []
    project = ListSource([dynamic("review", "project", ran), dynamic("help", "project", ran)])
    user = ListSource([dynamic("review", "user", ran), dynamic("deploy", "user", ran)])
    table = CommandTable()
    table.add_source(project)
    table.add_source(user)
    names = [entry.name for entry in table.entries()]
    builtins = [entry.name for entry in commands.COMMANDS]
    assert names == [*builtins, "review", "project:help", "user:review", "deploy"]
    assert table.lookup("help") is not None and table.lookup("help").origin == ""
    ctx = Context(table)
    await commands.run(ctx, "/review src/app.py")
    await commands.run(ctx, "/project:review again")
    await commands.run(ctx, "/user:review x")
    await commands.run(ctx, "/project:help")
    await commands.run(ctx, "/deploy")
    assert ran == [
        ("project:review", "src/app.py"),
        ("project:review", "again"),
        ("user:review", "x"),
        ("project:help", ""),
        ("user:deploy", ""),
    ]
    assert [entry.name for entry in table.complete("/rev")] == ["review"]
    assert [entry.name for entry in table.complete("/project")] == ["project:help"]


async def test_sources_are_asked_at_each_lookup_and_a_table_without_them_has_the_builtins():
    ran: list[tuple[str, str]] = []
    source = ListSource()
    table = CommandTable()
    table.add_source(source)
    ctx = Context(table)
    await commands.run(ctx, "/later")
    assert ctx.notices == [("Unknown command /later: /help lists the commands.", "error")]
    source.entries.append(dynamic("later", "mcp", ran))
    await commands.run(ctx, "/later now")
    assert ran == [("mcp:later", "now")]
    assert commands.complete("/later") == [] and commands.parse("/later").command is None
