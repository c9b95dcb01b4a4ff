"""What a model call costs: the model's price, where it comes from, and one call's cost ($2).

A price comes from, first to last: the provider's `pricing:` in config.yaml ("config"), a
server on this machine that discovery recognised (llama.cpp, vLLM, Ollama, LM Studio: free,
"local"), the built-in dated table (agent/data/prices.yaml, "table"; shown with `~`). A
server that reports a call's cost in its usage (OpenRouter's `usage.cost`) wins over the
table and local for that call ("server"); the user's own prices win over everything.
Without any, the cost stays unknown ("–"), never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from agent.config import ProviderConfig
    from agent.providers.base import UsagePart

PriceKey = Literal["input", "output", "cache_read", "cache_write"]
PRICE_KEYS: tuple[PriceKey, ...] = get_args(PriceKey)
"""USD per million tokens; cache prices default to the input price when not given."""
ANY_MODEL = "*"

PriceSource = Literal["config", "table", "server", "local"]
"""Where a cost came from: the user's prices, the built-in table, the server's own report,
or a local server (free)."""

Prices = Mapping[PriceKey, float]
"""One model's prices by PRICE_KEYS."""


def prices_for(pricing: Mapping[str, Prices], model: str) -> Prices | None:
    """The prices of `model` on one provider: its own entry, else the provider's "*" entry."""
    return pricing.get(model) or pricing.get(ANY_MODEL)


@dataclass(frozen=True)
class Price:
    """One model's prices (USD per million tokens), their source, and how its wire counts."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float | None = None
    cache_write: float | None = None
    source: PriceSource = "config"
    input_includes_cache: bool = True
    """OpenAI-style usage counts cached prompt tokens inside `input_tokens`; Anthropic's
    counts cache reads and writes apart from it."""
    dated: str | None = None
    """The table's date, for a price from the table."""

    @classmethod
    def of(
        cls, prices: Prices, source: PriceSource, *, input_includes_cache: bool, dated: str | None
    ) -> Price:
        """A Price from a mapping of PRICE_KEYS."""
        return cls(
            prices.get("input", 0.0),
            prices.get("output", 0.0),
            prices.get("cache_read"),
            prices.get("cache_write"),
            source,
            input_includes_cache,
            dated,
        )

    @property
    def estimated(self) -> bool:
        """True for a table price: a list price, which may not be what this account pays."""
        return self.source == "table"

    def cost(self, usage: UsagePart) -> tuple[float, bool]:
        """USD for one call's usage at this price, and whether it is an estimate."""
        cache_read, cache_write = usage.cache_read_tokens, usage.cache_write_tokens
        uncached = usage.input_tokens
        if self.input_includes_cache:
            uncached = max(0, uncached - cache_read - cache_write)
        total = (
            uncached * self.input
            + usage.output_tokens * self.output
            + cache_read * (self.input if self.cache_read is None else self.cache_read)
            + cache_write * (self.input if self.cache_write is None else self.cache_write)
        )
        return total / 1_000_000, self.estimated


@dataclass(frozen=True)
class Cost:
    """One call's cost in USD and where it came from."""

    usd: float
    source: PriceSource

    @property
    def estimated(self) -> bool:
        """True when it comes from the table (the status panel marks it `~`)."""
        return self.source == "table"


def price_for(provider: ProviderConfig, model: str) -> Price | None:
    """The price of `model` on `provider`: the user's, a local server's (0), the table's."""
    # Imported here: agent.config imports this module for PriceKey, and these import config.
    from agent.price_table import table_price
    from agent.providers.discovery import SERVERS

    includes_cache = provider.kind != "anthropic"
    configured = prices_for(provider.pricing, model)
    if configured:
        return Price.of(configured, "config", input_includes_cache=includes_cache, dated=None)
    facts = SERVERS.known(provider, model)
    if facts is not None and facts.server:
        return Price(source="local", input_includes_cache=includes_cache)
    return table_price(provider, model)


def cost_of(usage: UsagePart, price: Price | None) -> Cost | None:
    """One call's cost: at the user's price, else as the server reported it, else at the
    local or table price; None when nothing prices it."""
    if price is not None and price.source == "config":
        return Cost(price.cost(usage)[0], "config")
    if usage.reported_cost is not None:
        return Cost(usage.reported_cost, "server")
    if price is None:
        return None
    return Cost(price.cost(usage)[0], price.source)
