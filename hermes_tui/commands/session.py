"""Commands about sessions and the model: new, resume, continue, the panel, model, title."""

from __future__ import annotations

from typing import Any

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command
from hermes_tui.doors import agent_of
from hermes_tui.turns import WorkKind


@command("new", "", "Start a new session")
async def new(ctx: CommandContext, _argument: str) -> None:
    """Start a fresh session."""
    if await ctx.turns.refused("start a new session"):
        return
    await ctx.sessions.new()


@command(
    "resume",
    "[id|title]",
    "Resume a stored session (alone: pick one)",
    arguments=lambda ctx, _typed: ctx.sessions.resume_choices(),
)
async def resume(ctx: CommandContext, argument: str) -> None:
    """Resume a session by id, id prefix or title."""
    if not argument:
        # As in other agents, /resume alone is a picker: the sessions list, focused.
        await ctx.sessions.focus_list()
        return
    session = await ctx.sessions.find(argument)
    if session is None:
        await ctx.notice(f"No session matches {argument!r}.", "error")
        return
    await ctx.sessions.resume(session["id"])


@command("continue", "", "Finish a turn cut off when the app stopped")
async def continue_turn(ctx: CommandContext, _argument: str) -> None:
    """Continue a turn the last run left unfinished, with a typed recovery note (D4)."""
    if await ctx.turns.refused("continue"):
        return
    agent = agent_of(ctx)
    if not agent.interrupted:
        await ctx.notice("Nothing to continue: the last turn finished.")
        return
    await ctx.turns.begin(WorkKind.CONTINUE, "", agent.continue_interrupted)


@command("sessions", "", "Show and focus the sessions panel")
async def sessions(ctx: CommandContext, _argument: str) -> None:
    """Show and focus the sessions panel."""
    await ctx.sessions.focus_list()


@command(
    "model",
    "[provider:model]",
    "Show or switch the model",
    arguments=lambda ctx, typed: ctx.completion.model_choices(typed),
)
async def model(ctx: CommandContext, argument: str) -> None:
    """Show the model, or switch to `provider:model` (a model_switch row in a session)."""
    from agent.config import ConfigError

    agent = agent_of(ctx)
    if not argument:
        await _list_models(ctx)
        return
    if await ctx.turns.refused("switch models"):
        return
    try:
        agent.set_model(argument)
    except ConfigError as exc:
        await ctx.notice(str(exc), "error")
        return
    ctx.status.show_model()
    no_key = agent.missing_key()
    if no_key is not None:
        await ctx.notice(no_key, "error")
    elif agent.session_id is None:
        await ctx.notice(f"Model set to {argument} for this session.")


async def _list_models(ctx: CommandContext) -> None:
    """Say the model now, then what each provider serves once they answered (a worker)."""
    from hermes_tui.commands.model_list import listing_lines

    current = agent_of(ctx).model_ref
    known = ", ".join(sorted(ctx.config.providers))
    await ctx.notice(f"Model: {current}. Asking the providers for their models ({known})…")

    async def show(listings: list[Any]) -> None:
        await ctx.notice("\n".join(listing_lines(current, listings, ctx.config.providers)))

    ctx.completion.list_models(show)


MODE_NAMES = ("ask", "auto-edit", "plan", "yolo")


@command(
    "mode",
    "[ask|auto-edit|plan|yolo]",
    "Show or switch the approval mode (shift+Tab cycles)",
    arguments=lambda _ctx, _typed: MODE_NAMES,
)
async def mode(ctx: CommandContext, argument: str) -> None:
    """Say the approval mode, or switch it (yolo asks once); a running turn's next tool
    batch uses the new one (N1)."""
    from agent.modes import SUMMARIES, parse_mode

    if not argument:
        current = ctx.modes.current
        key = ctx.keys.shown("mode.cycle")
        await ctx.notice(
            f"Mode: {current} ({SUMMARIES[current]}). Modes: {', '.join(MODE_NAMES)}; "
            f"{key} cycles ask, auto-edit and plan."
        )
        return
    chosen = parse_mode(argument)
    if chosen is None:
        await ctx.notice(
            f"No mode called {argument!r}; the modes are {', '.join(MODE_NAMES)}.", "error"
        )
        return
    await ctx.modes.switch(chosen)


@command("title", "<text>", "Rename the current session")
async def title(ctx: CommandContext, argument: str) -> None:
    """Rename the current session."""
    if not argument:
        await ctx.notice("Usage: /title <text>.", "error")
        return
    if agent_of(ctx).session_id is None:
        await ctx.notice("No session yet: send a message first.", "error")
        return
    await ctx.sessions.rename(argument)
