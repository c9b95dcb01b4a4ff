"""Token usage: each model call's counts and cost, the session's running totals, the event.

The one place a call's usage goes, whatever the call was for (a turn, a compaction's
summary): `UsageRecorder.record` adds it to the totals, queues the store's token-count delta
(with its cost, S2) and emits `UsageUpdated`. A call the server sent no usage for (stopped or
failed mid-stream) is recorded from `estimated_usage`, marked estimated: the delta's
`estimated_calls` counts it, and the event says so.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent import events as ev
from agent.budget import SpendGuard
from agent.config import BudgetSettings, ProviderConfig
from agent.context_gauge import prompt_tokens
from agent.credentials import safe_url
from agent.kinds import CallPurpose
from agent.models import tokens_for_chars
from agent.pricing import Cost, Price, cost_of, price_for
from agent.providers.base import UsagePart
from agent.session_writer import SessionWriter

CONTEXT_KEY = "context_tokens"
"""The session metadata key holding the last call's context size."""


@dataclass
class Usage:
    """Running totals of the current session: what was stored at resume, plus this run's."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    estimated_calls: int = 0
    """Calls whose counts are estimates (no usage came from the server)."""
    context_tokens: int = 0
    """What the last turn call left in the model's context (kept in the session's metadata
    as `CONTEXT_KEY`, so a resumed session's context bar starts from it)."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_from_table: bool = False
    """Some call of this run was priced from the built-in table (the cost shows `~`, $2)."""
    subagent_tokens: int = 0
    """Of the totals, the tokens of the subagents its `task` calls ran (G1), this run."""
    subagent_cost_usd: float | None = None
    """Of the cost, theirs (None: none priced)."""

    @classmethod
    def of_session(
        cls,
        session: Mapping[str, Any] | None,
        providers: Mapping[str, ProviderConfig] | None = None,
    ) -> Usage:
        """The totals a stored session row holds (none for a new session); its cost is marked
        as a table's when the session's model is priced from the table now (`providers`)."""
        if not session:
            return cls()
        context = (session.get("metadata") or {}).get(CONTEXT_KEY)
        cost = session.get("estimated_cost_usd")
        provider = (providers or {}).get(session.get("provider") or "")
        model = session.get("model")
        price = price_for(provider, model) if provider and model and cost else None
        return cls(
            session.get("input_tokens") or 0,
            session.get("output_tokens") or 0,
            cost,
            session.get("estimated_calls") or 0,
            context if isinstance(context, int) and context > 0 else 0,
            session.get("cache_read_tokens") or 0,
            session.get("cache_write_tokens") or 0,
            price is not None and price.estimated,
        )


def estimated_usage(prompt: int, streamed_chars: int) -> UsagePart:
    """A call without the server's usage: the request's prompt size and the output so far."""
    return UsagePart(
        input_tokens=prompt, output_tokens=tokens_for_chars(streamed_chars), estimated=True
    )


def context_tokens(usage: UsagePart, provider_kind: str) -> int:
    """The tokens a call leaves in the model's context: its whole prompt and its output.

    The OpenAI wire's `prompt_tokens` include the cached ones; Anthropic's `input_tokens`
    leave them out (`cache_read_input_tokens`, `cache_creation_input_tokens` count apart).
    """
    prompt = prompt_tokens(usage, input_includes_cache=provider_kind != "anthropic")
    return prompt + usage.output_tokens


def call_cost(usage: UsagePart, provider: ProviderConfig, model: str) -> Cost | None:
    """What one call of `model` on `provider` cost, and where that came from ($2)."""
    return cost_of(usage, price_for(provider, model))


def model_price(provider: ProviderConfig, model: str) -> Price | None:
    """The price one call of `model` on `provider` is costed at (None: unknown)."""
    return price_for(provider, model)


def input_cost(provider: ProviderConfig, model: str, tokens: int) -> float | None:
    """USD for `tokens` prompt tokens sent to `model`, all at the input price (None: no
    price); what a spend cap projects before a call ($2)."""
    price = model_price(provider, model)
    if price is None:
        return None
    return price.cost(UsagePart(input_tokens=tokens))[0]


def cache_savings(
    provider: ProviderConfig | None, model: str, cache_read_tokens: int
) -> float | None:
    """USD the cache saved: its read tokens at the input price less the cache-read price
    (None: no price for the model, or its provider is no longer configured)."""
    price = model_price(provider, model) if provider is not None else None
    if price is None:
        return None
    read_price = price.input if price.cache_read is None else price.cache_read
    return cache_read_tokens * (price.input - read_price) / 1_000_000


def token_delta(
    usage: UsagePart, provider_name: str, provider: ProviderConfig, model: str, cost: Cost | None
) -> dict[str, Any]:
    """The store's token-count delta of one call: its counts, its route and its cost."""
    return {
        "model": model,
        "provider": provider_name,
        "route": safe_url(provider.base_url),  # no URL credentials (H5)
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "api_calls": 1,
        "estimated_calls": int(usage.estimated),
        "estimated_cost_usd": None if cost is None else cost.usd,
    }


class UsageRecorder:
    """The session's usage totals, its spend caps, and the path every call's usage takes."""

    def __init__(self, budget: BudgetSettings | None = None) -> None:
        self.totals = Usage()
        self.budget = SpendGuard(budget or BudgetSettings())
        """The caps this session's calls are held to ($2)."""
        # Side-by-side subagents record into their parent's totals from threads of their own.
        self._lock = threading.RLock()

    def count(self, usage: UsagePart, cost: float | None) -> None:
        """Add one call's counts and cost to the totals (nothing stored, nothing told)."""
        with self._lock:
            self._add(usage, cost)

    def _add(self, usage: UsagePart, cost: float | None) -> None:
        totals = self.totals
        totals.input_tokens += usage.input_tokens
        totals.output_tokens += usage.output_tokens
        totals.estimated_calls += usage.estimated
        totals.cache_read_tokens += usage.cache_read_tokens
        totals.cache_write_tokens += usage.cache_write_tokens
        if cost is not None:
            totals.cost_usd = (totals.cost_usd or 0.0) + cost

    def start(self, totals: Usage) -> None:
        """Another session: its stored totals, and caps raised for it alone forgotten."""
        self.totals = totals
        self.budget.new_session()

    def record(
        self,
        usage: UsagePart,
        *,
        provider_name: str,
        provider: ProviderConfig,
        model: str,
        session_id: str | None,
        writer: SessionWriter,
        sink: ev.Sink,
        purpose: CallPurpose = CallPurpose.TURN,
        context_window: int | None = None,
    ) -> None:
        """Add one call's usage to the totals, queue it for the store, and announce it."""
        with self._lock:
            totals = self.totals
            priced = call_cost(usage, provider, model)
            cost = None if priced is None else priced.usd
            self._add(usage, cost)
            if priced is not None:
                totals.cost_from_table = totals.cost_from_table or priced.estimated
            delta = token_delta(usage, provider_name, provider, model, priced)
            if purpose == CallPurpose.SUBAGENT:
                totals.subagent_tokens += usage.input_tokens + usage.output_tokens
                if cost is not None:
                    totals.subagent_cost_usd = (totals.subagent_cost_usd or 0.0) + cost
            writer.queue_tokens(session_id, **delta)
            context = context_tokens(usage, provider.kind)
            if purpose == CallPurpose.TURN:  # a summary call's prompt is not the context
                totals.context_tokens = context
            sink(
                ev.UsageUpdated(
                    usage.input_tokens,
                    usage.output_tokens,
                    totals.input_tokens,
                    totals.output_tokens,
                    cost,
                    totals.cost_usd,
                    usage.estimated,
                    purpose,
                    context,
                    context_window,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    totals.cache_read_tokens,
                    totals.cache_write_tokens,
                    None if priced is None else priced.source,
                    totals.cost_from_table,
                )
            )
            self.budget.after_call(totals.cost_usd or 0.0, sink)
