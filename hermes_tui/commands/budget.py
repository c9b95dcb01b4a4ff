"""What the session costs ($2): `/budget` shows the caps and their spend and sets one for
this session; `/usage` shows spend and tokens by day, model and project."""

from __future__ import annotations

from agent.budget import CAP_NAMES, SpendGuard, money
from hermes_tui.commands.context import CommandContext
from hermes_tui.commands.registry import command

USAGE = "Use /budget, or /budget turn|session|day USD (e.g. /budget session 5)."


def _caps(ctx: CommandContext, _typed: str) -> list[str]:
    return [f"{name} " for name in CAP_NAMES]


@command("budget", "[turn|session|day USD]", "Show the spend caps, or raise one for this session",
         arguments=_caps)  # fmt: skip
async def budget(ctx: CommandContext, argument: str) -> None:
    """Show each cap and its spend, or set one cap for the rest of this session."""
    agent = ctx.agent
    if agent is None:
        return
    guard = agent.usage_recorder.budget
    if argument:
        name, _, amount = argument.partition(" ")
        usd = _amount(amount.strip().removeprefix("$"))
        if name not in CAP_NAMES or usd is None:
            await ctx.notice(f"Not a cap and an amount: {argument!r}. {USAGE}", "error")
            return
        guard.raise_cap(name, usd)  # one of CAP_NAMES: checked just above
        ctx.status.refresh()
        await ctx.notice(f"The {name} cap is {money(usd)} for this session.")
        return
    # Idle, today's figure is the store's (every session); a running turn holds its own.
    today = await ctx.db.spent_on_day() if ctx.db is not None and not agent.busy else None
    await ctx.notice("\n".join(budget_lines(guard, agent.usage.cost_usd or 0.0, today)))


def _amount(text: str) -> float | None:
    """A cap in USD, or None when `text` is not a number of 0 or more."""
    try:
        usd = float(text)
    except ValueError:
        return None
    return usd if usd >= 0 and usd == usd and usd != float("inf") else None


def budget_lines(guard: SpendGuard, session_spent: float, today: float | None) -> list[str]:
    """The /budget view: each cap, what it holds against, and whether /budget set it."""
    spent = guard.spent(session_spent)
    if today is not None:
        spent["day"] = today
    lines = ["Spend caps (/budget session 5 sets one for this session):"]
    for name in CAP_NAMES:
        cap = guard.cap(name)
        limit = money(cap) if cap is not None else "no cap"
        raised = "  (this session)" if name in guard.raised else ""
        lines.append(f"  {name:<8} {money(spent[name])} of {limit}{raised}")
    lines.append(f"A request over {guard.settings.ask_above_tokens:,} tokens asks first.")
    return lines


@command("usage", "", "Spend and tokens by day, model and project, with cache savings")
async def usage(ctx: CommandContext, _argument: str) -> None:
    """Open the usage screen on the store's last days."""
    import time

    from hermes_tui.screens.usage import UsageScreen  # not on the start-up path
    from hermes_tui.usage_view import DEFAULT_DAYS, usage_lines

    if ctx.db is None or ctx.agent is None:
        return
    today = time.strftime("%Y-%m-%d", time.localtime(ctx.probes.now()))
    lines = usage_lines(await ctx.db.usage_report(DEFAULT_DAYS, today), ctx.config)
    await ctx.push_screen(UsageScreen(lines, DEFAULT_DAYS, session_line(ctx)))


def session_line(ctx: CommandContext) -> str:
    """This session's spend against its cap, as the usage screen's first line says it."""
    assert ctx.agent is not None
    usage = ctx.agent.usage
    cap = ctx.agent.usage_recorder.budget.cap("session")
    called = usage.input_tokens or usage.output_tokens
    if usage.cost_usd is not None or not called:
        shown = money(usage.cost_usd or 0.0)
    else:
        shown = "– (no price for the model)"
    return f"This session: {shown}" + (f" of its {money(cap)} cap" if cap is not None else "")
