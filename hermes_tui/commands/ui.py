"""Commands about the app itself: the theme, help and quitting."""

from __future__ import annotations

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command


@command(
    "theme",
    "[name]",
    "List the themes or switch theme",
    arguments=lambda ctx, _typed: ctx.themes.names(),
)
async def theme(ctx: CommandContext, argument: str) -> None:
    """Show the themes, or switch to one (remembered in config.yaml)."""
    themes = ctx.themes
    names = ", ".join(themes.names())
    if not argument:
        await ctx.notice(
            f"Theme: {themes.current}. Themes: {names}. "
            "Switch with /theme <name> or the command palette (ctrl+p)."
        )
        return
    if argument not in themes.names():
        await ctx.notice(f"No theme called {argument!r}; themes: {names}.", "error")
        return
    if themes.switch(argument):
        await ctx.notice(f"Theme set to {argument} (saved in {ctx.config.config_path}).")


@command("help", "", "Show commands and keys")
async def help_screen(ctx: CommandContext, _argument: str) -> None:
    """Show commands and keys."""
    await ctx.show_help()


@command("quit", "", "Quit hermes-tui")
async def quit_app(ctx: CommandContext, _argument: str) -> None:
    """Quit."""
    await ctx.action_quit()
