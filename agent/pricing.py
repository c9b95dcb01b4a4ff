"""What a model call cost, from the prices the user configured (`providers.X.pricing`).

Prices change too often for a built-in table to stay right, and a wrong cost is worse than
none: without a price for the model the cost stays unknown ("–"), never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

PriceKey = Literal["input", "output", "cache_read", "cache_write"]
PRICE_KEYS: tuple[PriceKey, ...] = get_args(PriceKey)
"""USD per million tokens; cache prices default to the input price when not given."""
ANY_MODEL = "*"


Prices = Mapping[PriceKey, float]
"""One model's prices by PRICE_KEYS."""


def prices_for(pricing: Mapping[str, Prices], model: str) -> Prices | None:
    """The prices of `model` on one provider: its own entry, else the provider's "*" entry."""
    return pricing.get(model) or pricing.get(ANY_MODEL)


def call_cost(
    prices: Prices | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    input_includes_cache: bool,
) -> float | None:
    """USD for one call, or None without prices.

    OpenAI-style usage counts cached prompt tokens inside `input_tokens`; Anthropic's counts
    cache reads and writes apart from it (`input_includes_cache` says which).
    """
    if not prices:
        return None
    input_price = prices.get("input", 0.0)
    uncached = input_tokens
    if input_includes_cache:
        uncached = max(0, input_tokens - cache_read_tokens - cache_write_tokens)
    total = (
        uncached * input_price
        + output_tokens * prices.get("output", 0.0)
        + cache_read_tokens * prices.get("cache_read", input_price)
        + cache_write_tokens * prices.get("cache_write", input_price)
    )
    return total / 1_000_000
