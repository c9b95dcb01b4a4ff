"""Commands about the project's own context: what the request holds, and writing AGENTS.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command
from hermes_tui.doors import agent_of
from hermes_tui.safe_text import safe_name
from hermes_tui.turns import Prompt

if TYPE_CHECKING:
    from agent.context_report import ContextReport
    from agent.hooks.engine import Hooks

INIT_PROMPT = (
    "Write an AGENTS.md file at the root of this workspace for the coding agents that will "
    "work here. First look around: read the README, the build and packaging files, the CI "
    "configuration and a few source and test files. Then write down, short and factual: how "
    "to install, build, run, test and lint (the exact commands), the layout (what lives "
    "where), and the conventions a contributor must follow (style, naming, how tests are "
    "written, what to never do). {existing}Use write_file (or edit_file) for AGENTS.md; the "
    "user approves the write."
)
BUILD_ON = (
    "These instruction files are already in effect here, and their text is in your "
    "instructions: {files}. Build on them instead of starting over: read each, carry over "
    "every instruction in them that is still right, correct what is wrong and add what is "
    "missing. Leave the other files as they are (they stay in effect). End your answer by "
    "saying what you kept from each of them and what you changed. "
)


def _project_files(ctx: CommandContext) -> list[str]:
    """The instruction files in effect that belong to the repository (not the user's own,
    which is for every project and has no place in this one's AGENTS.md)."""
    return [name for f in agent_of(ctx).context.files if f.scope != "user" for name in f.names]


def _count(n: int) -> str:
    return f"{n:,}"


def context_lines(report: ContextReport) -> list[str]:
    """The `/context` view: each part of the next request and its estimated tokens."""
    rows = [
        ("system prompt", report.system, ""),
        ("instructions", report.instructions, f"{len(report.files)} file(s)"),
    ]
    width = max(len(_count(v)) for v in (report.total, report.tools, report.history))
    window = _count(report.window) if report.window else "unknown"
    lines = [f"The next request, in estimated tokens (window {window}):"]
    lines += [
        f"  {name:<14}{_count(value):>{width}}  {note}".rstrip() for name, value, note in rows
    ]
    for cost in report.files:
        scope = {"user": "  yours, for every project", "subtree": "  joined"}.get(cost.scope, "")
        cut = "  (cut to the cap)" if cost.truncated else ""
        lines.append(f"    {safe_name(cost.shown)}  {_count(cost.tokens)}{scope}{cut}")
    lines.append(f"  {'tools':<14}{_count(report.tools):>{width}}  {report.tool_count} tools")
    pictures = f", {report.images} image(s) {_count(report.image_tokens)}" if report.images else ""
    lines.append(
        f"  {'history':<14}{_count(report.history):>{width}}  {report.messages} messages{pictures}"
    )
    share = f"  {report.total / report.window:.1%} of the window" if report.window else ""
    lines.append(f"  {'total':<14}{_count(report.total):>{width}}{share}")
    return lines


@command("context", "", "Show instruction files and token costs")
async def context(ctx: CommandContext, _argument: str) -> None:
    """Show the instruction files in effect and the token cost of each part of the request."""
    from agent.context_report import context_report

    report = context_report(agent_of(ctx))
    if not report.files:
        hint = "No instruction file: /init asks the agent to write an AGENTS.md."
        await ctx.notice("\n".join([*context_lines(report), hint]))
        return
    await ctx.notice("\n".join(context_lines(report)))


@command("init", "", "Ask the agent to write AGENTS.md")
async def init(ctx: CommandContext, _argument: str) -> None:
    """Ask the agent to write (or improve) AGENTS.md, building on every instruction file in
    effect, through the normal write approval."""
    files = [safe_name(name) for name in _project_files(ctx)]
    existing = BUILD_ON.format(files=", ".join(files)) if files else ""
    if files:
        them, they = ("it", "it stays") if len(files) == 1 else ("them", "they stay")
        await ctx.notice(
            f"/init builds on {', '.join(files)}: the agent is asked to keep what is right "
            f"in {them} and to say what it kept; {they} in effect."
        )
    await ctx.turns.send_prompt(Prompt(INIT_PROMPT.format(existing=existing), "/init"))


NO_RULES = (
    "No permission rules: add `permissions: {{allow: [...], ask: [...], deny: [...]}}` to "
    "{config}, or answer p (always for this project) when a simple command asks."
)


@command("permissions", "", "List the permission rules in effect and where each comes from")
async def permissions(ctx: CommandContext, _argument: str) -> None:
    """List the allow / ask / deny rules in effect (N3): config.yaml's and this project's."""
    await ctx.notice("\n".join(permission_lines(ctx)))


def permission_lines(ctx: CommandContext) -> list[str]:
    """The /permissions listing: one row per rule, its decision, the rule, where it is from."""
    from agent.homes import tilde

    rules = ctx.agent.permissions if ctx.agent is not None else None
    placed = rules.rules() if rules is not None else []
    lines = (
        ["Permission rules (deny wins over ask, ask over allow):"]
        if placed
        else [NO_RULES.format(config=tilde(ctx.config.config_path))]
    )
    for rule in placed:
        lines.append(f"  {rule.decision.value:<6} {safe_name(rule.rule.text)}  ({rule.origin})")
    if rules is not None and rules.project_path is not None:
        lines.append(f"This project's rules: {safe_name(tilde(rules.project_path))}")
    if rules is not None and rules.problem:
        lines.append(f"Not read: {safe_name(rules.problem)}.")
    return lines


NO_HOOKS = (
    "No hooks: add `hooks: {{after_tool: [{{match: write_file, command: ...}}]}}` to {config}, "
    "or a project's .hermes-tui/hooks.yaml (see the README's Hooks)."
)


@command("hooks", "[allow]", "List the hooks in effect; allow runs this project's hooks")
async def hooks(ctx: CommandContext, argument: str) -> None:
    """List the user's hooks and the project's (N4), or consent to the project's with `allow`."""
    engine = ctx.agent.hooks if ctx.agent is not None else None
    if argument.strip() not in ("", "allow"):
        await ctx.notice("Usage: /hooks, or /hooks allow (this project's hooks).", "error")
        return
    if engine is None:
        await ctx.notice("The hooks are read once the app has started: try again.", "error")
        return
    if argument.strip() == "allow":
        import asyncio

        await ctx.notice(safe_name(await asyncio.to_thread(engine.allow_project)))
        return
    await ctx.notice("\n".join(hook_lines(ctx, engine)))


def hook_lines(ctx: CommandContext, engine: Hooks) -> list[str]:
    """The /hooks listing: one row per hook, its event, match, command and where it is from."""
    from agent.homes import tilde
    from agent.hooks.settings import EVENTS, TOOL_EVENTS

    project = engine.project
    allowed = engine.project_allowed
    rows = [("config", event, spec) for event in EVENTS for spec in engine.settings.of(event)]
    rows += [("project", event, spec) for event, spec in project.listed]
    if not rows:
        return [NO_HOOKS.format(config=tilde(ctx.config.config_path))]
    lines = ["Hooks (run in the workspace, unsandboxed, each within its timeout):"]
    for origin, event, spec in rows:
        match = f" {spec.match}" if event in TOOL_EVENTS else ""
        held = "" if origin == "config" or allowed else ", not allowed: /hooks allow"
        lines.append(
            f"  {event}{match}: {safe_name(spec.command)}  ({origin}, {spec.timeout:g} s{held})"
        )
    if project.problem:
        lines.append(f"Not read: {safe_name(project.problem)}.")
    return lines
