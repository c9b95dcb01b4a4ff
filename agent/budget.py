"""Spend caps per turn, session and day, held before each call is sent ($2).

Before a model call (a turn's or a compaction's summary) `guard_call` projects what its
input will cost (the request's prompt tokens, all at the input price) and adds it to what
was spent so far; a call that would pass a cap is not sent: `BudgetStop` carries the one
sentence naming the cap and the spend. A request larger than `budget.ask_above_tokens`
asks the user once first (the approval callback; none, as headless without `--yes`: not
sent). After each call, `SpendGuard.after_call` warns once per cap at 80 %.

The day is the local calendar day across every session: what the store holds for today
when the turn began, plus what this session spent since.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from agent import events as ev
from agent.config import BudgetSettings, Config

if TYPE_CHECKING:
    from agent.ports import ApprovalPolicy
    from agent.session_writer import SessionWriter
    from agent.usage import UsageRecorder

log = logging.getLogger("hermes_tui.agent")

CapName = Literal["turn", "session", "day"]
CAP_NAMES: tuple[CapName, ...] = get_args(CapName)
WARN_AT = 0.8
"""The share of a cap at which its warning shows (once per cap per session)."""
LARGE_REQUEST_TOOL = "large_request"
"""The approval request's `tool` for a request over `budget.ask_above_tokens`."""


class BudgetStop(Exception):
    """A call that was not sent: it would pass a cap, or its size was declined. The message
    is the sentence the user reads."""


def money(usd: float) -> str:
    """A dollar amount as the sentences show it: cents, or four places below a cent."""
    if usd == 0 or usd >= 0.01:
        return f"${usd:,.2f}"
    return f"${usd:.4f}"


def raise_hint(name: CapName) -> str:
    """How to raise a cap, in the TUI and for a script alike."""
    return f"Raise it with /budget {name} USD, or `budget.{name}` in config.yaml."


@dataclass
class SpendGuard:
    """One session's caps (config, then what /budget raised) and the spend they hold to."""

    settings: BudgetSettings = field(default_factory=BudgetSettings)
    raised: dict[CapName, float] = field(default_factory=dict)
    """Caps raised for this session with /budget (they win over the config's)."""
    warned: set[CapName] = field(default_factory=set)
    turn_start: float = 0.0
    """The session's spend when the current turn (or /compact) began."""
    day_start: float = 0.0
    """Today's spend in the store, every session, when the current turn began."""
    approved_tokens: int = 0
    """The largest request the user agreed to send this session (0: none asked)."""
    told_no_price: bool = False

    def new_session(self) -> None:
        """Another session: the raised caps, the warnings and the size answer are its own."""
        self.raised.clear()
        self.warned.clear()
        self.approved_tokens = 0
        self.told_no_price = False

    def cap(self, name: CapName) -> float | None:
        """The cap in effect (None: no cap)."""
        if name in self.raised:
            return self.raised[name]
        value: float | None = getattr(self.settings, name)
        return value

    def raise_cap(self, name: CapName, usd: float) -> None:
        """Set a cap for the rest of this session (`/budget session 5`); its warning may
        show again."""
        self.raised[name] = usd
        self.warned.discard(name)

    def begin(self, session_spent: float, day_spent: float) -> None:
        """A turn (or a /compact) begins: what the session and the day have spent."""
        self.turn_start = session_spent
        self.day_start = day_spent

    def spent(self, session_spent: float) -> dict[CapName, float]:
        """What each cap holds against now."""
        since = max(0.0, session_spent - self.turn_start)
        return {"turn": since, "session": session_spent, "day": self.day_start + since}

    @property
    def any_cap(self) -> bool:
        """True when a cap is set."""
        return any(self.cap(name) is not None for name in CAP_NAMES)

    def check(self, projected: float, session_spent: float) -> None:
        """Raise BudgetStop when a call of input cost `projected` would pass a cap."""
        spent = self.spent(session_spent)
        for name in CAP_NAMES:
            cap = self.cap(name)
            if cap is not None and spent[name] + projected > cap:
                raise BudgetStop(
                    f"Stopped: this call (~{money(projected)}) would pass the {name} cap of "
                    f"{money(cap)} (spent {money(spent[name])}). {raise_hint(name)}"
                )

    def warnings(self, session_spent: float) -> list[str]:
        """The 80 % warnings due now, each once per cap per session."""
        spent = self.spent(session_spent)
        due = []
        for name in CAP_NAMES:
            cap = self.cap(name)
            if cap is None or name in self.warned or spent[name] < WARN_AT * cap:
                continue
            self.warned.add(name)
            share = spent[name] / cap * 100 if cap else 100.0
            due.append(
                f"Spent {money(spent[name])} of the {name} cap of {money(cap)} "
                f"({share:.0f} %); a call that would pass it is not sent."
            )
        return due

    def after_call(self, session_spent: float, sink: ev.Sink) -> None:
        """After a call's usage is counted: show the warnings now due."""
        for text in self.warnings(session_spent):
            sink(ev.Notice(text, "warning"))


class SpendHost(Protocol):
    """What a call's guard reads of its agent (a turn's, a compaction's)."""

    config: Config
    sink: ev.Sink
    writer: SessionWriter
    usage_recorder: UsageRecorder
    approve: ApprovalPolicy | None

    @property
    def provider_name(self) -> str: ...
    @property
    def model_name(self) -> str: ...
    @property
    def parent(self) -> SpendHost | None:
        """The agent whose `task` call runs this one (a subagent, G1), else None."""
        ...


def session_recorder(host: SpendHost) -> UsageRecorder:
    """The recorder the caps hold to: the user's session's. A subagent's calls are billed
    to its parent's session (G1), so they count against that session's caps, not a fresh
    set of their own."""
    while host.parent is not None:
        host = host.parent
    return host.usage_recorder


def begin_spending(host: SpendHost) -> None:
    """A turn (or a /compact) begins: read today's spend from the store when a day cap is
    set (the turn's end flushed this session's counts, so they are in it). A subagent's
    turn is part of its parent's, which began already."""
    if host.parent is not None:
        return
    guard = host.usage_recorder.budget
    day = host.writer.spent_today() if guard.cap("day") is not None else 0.0
    guard.begin(host.usage_recorder.totals.cost_usd or 0.0, day)


def guard_call(host: SpendHost, prompt_tokens: int, *, ask_size: bool = True) -> None:
    """Before a call is sent: raise BudgetStop when its input would pass a cap, or (with
    `ask_size`) when it is large and the user does not agree to send it."""
    from agent.usage import input_cost

    recorder = session_recorder(host)
    guard = recorder.budget
    provider = host.config.provider(host.provider_name)
    cost = input_cost(provider, host.model_name, prompt_tokens)
    if cost is None:
        if guard.any_cap and not guard.told_no_price:
            guard.told_no_price = True
            text = (
                f"Spend caps cannot hold on {host.provider_name}:{host.model_name}: it has no "
                f"price (set `providers.{host.provider_name}.pricing`)."
            )
            host.sink(ev.Notice(text, "warning"))
    else:
        guard.check(cost, recorder.totals.cost_usd or 0.0)
    if ask_size:
        _ask_if_large(host, guard, prompt_tokens, cost)


def _ask_if_large(host: SpendHost, guard: SpendGuard, tokens: int, cost: float | None) -> None:
    """A request over the size threshold asks once; a yes holds until it grows by another
    threshold's worth (each tool round of the same turn would ask again otherwise)."""
    threshold = guard.settings.ask_above_tokens
    if tokens <= max(threshold, guard.approved_tokens + threshold if guard.approved_tokens else 0):
        return
    priced = f" (~{money(cost)} of input)" if cost is not None else ""
    question = f"Send a request of {tokens:,} tokens{priced}?"
    if _asked(host.approve, question, threshold):
        guard.approved_tokens = tokens
        return
    raise BudgetStop(
        f"Not sent: the request is {tokens:,} tokens{priced}, over `budget.ask_above_tokens` "
        f"({threshold:,}), and was not approved (headless: --yes sends it)."
    )


def _asked(approve: Callable[[Any], Any] | None, question: str, threshold: int) -> bool:
    """The user's answer to the size question through the approval dialog (none: no)."""
    if approve is None:
        return False
    from agent.tools.approvals import Verdict
    from agent.tools.registry import ApprovalRequest

    request = ApprovalRequest(
        tool=LARGE_REQUEST_TOOL,
        summary=question,
        detail=f"It is over `budget.ask_above_tokens` ({threshold:,} tokens).",
    )
    return Verdict.of(approve(request)).approved
