"""`/ps`: the background processes the agent started (G2), in a panel with a stop key."""

from __future__ import annotations

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command


@command("ps", "", "background processes: command, age, ports, output; s stops one")
async def ps(ctx: CommandContext, _argument: str) -> None:
    """Open the background processes panel."""
    from agent import background
    from hermes_tui.screens.processes import ProcessesScreen  # not on the start-up path

    await ctx.push_screen(ProcessesScreen(background.BACKGROUND, ctx.notice))
