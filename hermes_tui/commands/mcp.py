"""`/mcp` (the panel, restart / disable / allow / stderr) and MCP prompts as slash commands.

A server's prompt `review` is `/mcp:<server>:review [arguments]`: the words after it fill the
prompt's arguments in order ("quoted words" are one; the last argument takes the rest), and
the prompt's text is sent as your message, like typing it.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Sequence
from typing import Any

from agent.mcp.names import clean
from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import SlashCommand, command
from hermes_tui.safe_text import safe_line

NONE_CONFIGURED = (
    "No MCP servers: add them under `mcp_servers:` in {config}, or in the project's "
    ".mcp.json (see docs/mcp.md)."
)
VERBS = ("restart", "disable", "allow", "stderr")


def manager_of(ctx: Any) -> Any:
    """The app's McpManager, or None when no server is configured."""
    runtime = getattr(ctx, "runtime", None)
    return getattr(runtime, "mcp", None)


@command("mcp", "[restart|disable|allow|stderr <server>]", "MCP servers: the panel, or act on one")
async def mcp(ctx: CommandContext, argument: str) -> None:
    """Open the MCP panel, or restart / disable / allow a server, or show its stderr."""
    manager = manager_of(ctx)
    if manager is None:
        await ctx.notice(NONE_CONFIGURED.format(config=ctx.config.config_path), "error")
        return
    verb, _, name = argument.partition(" ")
    name = name.strip()
    if verb and (verb not in VERBS or not name):
        await ctx.notice(
            "Usage: /mcp, or /mcp restart|disable|allow|stderr <server> "
            f"(servers: {', '.join(manager.servers) or 'none'}).",
            "error",
        )
        return
    from hermes_tui.screens.mcp import McpScreen  # not on the start-up path

    if verb in ("", "stderr"):
        if name and manager.get(name) is None:
            await ctx.notice(f"No MCP server called {name!r}.", "error")
            return
        screen = McpScreen(
            manager,
            ctx.notice,
            focus_server=name or None,
            show_stderr=bool(verb),
            session_allowed=_session_allowed(ctx),
        )
        await ctx.push_screen(screen)
        return
    try:
        sentence = await asyncio.to_thread(getattr(manager, verb), name)
    except LookupError as exc:
        await ctx.notice(str(exc), "error")
        return
    await ctx.notice(sentence)


def _session_allowed(ctx: CommandContext) -> Any:
    """Whether this session's "always" covers a tool of a server (for the panel)."""
    from agent.tools.approvals import AlwaysScope

    approvals = getattr(ctx.agent, "approvals", None)
    if approvals is None:
        return None
    return lambda server, tool: approvals.covers(AlwaysScope(tool, server=server))


class McpPrompts:
    """A command source: the prompts of every ready MCP server (read on each lookup)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        """Anything with a `runtime` (the app): its servers are read when asked."""

    def commands(self) -> Sequence[SlashCommand]:
        """`/mcp:<server>:<prompt>` for each prompt now offered."""
        manager = manager_of(self.app)
        if manager is None:
            return []
        out = []
        for prompt in manager.prompts():
            # Names and descriptions are the server's text: made safe before any list shows
            # them (the composer's suggestions and /help draw what they are given, H1).
            args = " ".join(
                f"<{clean(a)}>" if required else f"[{clean(a)}]" for a, required in prompt.arguments
            )
            out.append(
                SlashCommand(
                    name=f"mcp:{prompt.server.lower()}:{clean(prompt.name).lower()}",
                    args=args,
                    help=" ".join(safe_line(prompt.description).split())[:80] or "MCP prompt",
                    run=_runner(prompt),
                    origin="mcp",
                )
            )
        return out


def fill_arguments(prompt: Any, argument: str) -> dict[str, str] | str:
    """The prompt's arguments from the typed words, or a usage sentence when one is missing."""
    names = [name for name, _ in prompt.arguments]
    try:
        words = shlex.split(argument)
    except ValueError:  # an unclosed quote: plain words
        words = argument.split()
    if names and len(words) > len(names):
        words = [*words[: len(names) - 1], " ".join(words[len(names) - 1 :])]
    values = dict(zip(names, words, strict=False))
    missing = [name for name, required in prompt.arguments if required and name not in values]
    if missing:
        usage = " ".join(f"<{name}>" for name in names)
        return f"/mcp:{prompt.server}:{prompt.name} needs {', '.join(missing)}: {usage}."
    return values


def _runner(prompt: Any) -> Any:
    async def run(ctx: CommandContext, argument: str) -> None:
        from agent.mcp.results import prompt_text

        manager = manager_of(ctx)
        values = fill_arguments(prompt, argument)
        if isinstance(values, str):
            await ctx.notice(values, "error")
            return
        try:
            result = await asyncio.to_thread(manager.get_prompt, prompt.server, prompt.name, values)
        except Exception as exc:  # the server's failure is one sentence
            text = str(exc) or type(exc).__name__
            await ctx.notice(f"MCP server {prompt.server}: {text}", "error")
            return
        await ctx.turns.send(prompt_text(result), "queue")

    return run
