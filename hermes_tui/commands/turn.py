"""Commands that act on the running turn and the input queue (T1-T6, C1)."""

from __future__ import annotations

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command
from hermes_tui.doors import agent_of
from hermes_tui.turns import COMPACT_BUSY, WorkKind


@command("steer", "<text>", "Guide the running turn (sent as text)")
async def steer(ctx: CommandContext, argument: str) -> None:
    """Send text into the running turn (queued if no turn takes it); never run as a command."""
    if not argument:
        await ctx.notice("Usage: /steer <text>.", "error")
        return
    await ctx.turns.send(argument, "steer")


@command(
    "queue",
    "<text> | rm N | edit N | resume",
    "Queue text, or edit the queue",
    arguments=lambda _ctx, _typed: ["rm", "edit", "resume"],
)
async def queue(ctx: CommandContext, argument: str) -> None:
    """`/queue <text>` queues; `/queue rm N`, `/queue edit N`, `/queue resume` act on it."""
    turns = ctx.turns
    verb, _, rest = argument.partition(" ")
    items = turns.queue.items
    if verb in ("rm", "edit") and rest.strip().isdigit():
        position = int(rest)
        if not 1 <= position <= len(items):
            await ctx.notice(f"No queued item {position}: the queue has {len(items)}.", "error")
        elif verb == "rm":
            turns.remove_queued(items[position - 1].id)
        else:
            turns.edit_queued(items[position - 1].id)
        return
    if argument == "resume":
        await turns.resume_queue()
        return
    if not argument:
        focus = ctx.keys.shown("queue.focus")
        await ctx.notice(
            f"{len(items)} queued. /queue <text> adds, /queue rm N removes, /queue edit N "
            f"puts one back in the input, /queue resume runs a paused queue; {focus} "
            "selects one (delete removes, e edits)."
        )
        return
    await turns.enqueue(argument)


@command("stop", "", "Stop the running turn (the queue pauses)")
async def stop(ctx: CommandContext, _argument: str) -> None:
    """Stop the running turn; queued input stays, paused."""
    ctx.turns.stop()


@command("redirect", "<text>", "Interrupt with a correction")
async def redirect(ctx: CommandContext, argument: str) -> None:
    """Interrupt the model's current answer and re-run it with a correction (T5)."""
    if not argument:
        await ctx.notice("Usage: /redirect <text>.", "error")
        return
    await ctx.turns.send(argument, "interrupt")


@command("compact", "[focus]", "Summarise older messages for the model")
async def compact(ctx: CommandContext, argument: str) -> None:
    """Summarise the middle of the conversation for the model now (C1); the rows stay here.

    It runs like a turn: input typed meanwhile is queued, escape cancels it.
    """
    if ctx.turns.busy:
        await ctx.notice(COMPACT_BUSY, "warning")
        return
    agent = agent_of(ctx)
    if agent.session_id is None:
        await ctx.notice("Nothing to compact yet: send a message first.")
        return
    focus = argument or None
    await ctx.turns.begin(WorkKind.COMPACTION, "", lambda: agent.compact(focus))
