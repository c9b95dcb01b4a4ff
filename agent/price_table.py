"""The built-in dated price table (agent/data/prices.yaml): list prices of common models ($2).

A vendor is recognised by the host of the provider's base_url (its SDK's default when it
names none), never by the name the user gave the provider: a provider called "openai" that
points at a proxy on this machine is not OpenAI's price list.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from agent.pricing import PRICE_KEYS, Price, Prices
from agent.providers.discovery import host

if TYPE_CHECKING:
    from agent.config import ProviderConfig

TABLE_FILE = "prices.yaml"
_DATE_SUFFIX = re.compile(r"-(\d{8}|latest)$")


@dataclass(frozen=True)
class PriceTable:
    """The table: its date, each vendor's hosts and its models' prices."""

    date: str
    hosts: dict[str, str]
    """Host name -> vendor."""
    models: dict[str, dict[str, Prices]]
    """Vendor -> model name -> prices."""

    def prices(self, host: str, model: str) -> Prices | None:
        """The prices of `model` at `host`: by its exact name, else without a date suffix."""
        vendor = self.hosts.get(host.lower())
        if vendor is None:
            return None
        models = self.models[vendor]
        return models.get(model) or models.get(_DATE_SUFFIX.sub("", model))


def parse_table(data: Any) -> PriceTable:
    """Check the table's YAML; a malformed entry raises ValueError naming it."""
    if not isinstance(data, dict) or not isinstance(data.get("vendors"), dict):
        raise ValueError("the price table needs `date:` and `vendors:`")
    date = data.get("date")
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ValueError(f"the price table's date must be YYYY-MM-DD, not {date!r}")
    hosts: dict[str, str] = {}
    models: dict[str, dict[str, Prices]] = {}
    for vendor, entry in data["vendors"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("models"), dict):
            raise ValueError(f"vendors.{vendor} needs `hosts:` and `models:`")
        for name in entry.get("hosts") or ():
            hosts[str(name).lower()] = vendor
        models[vendor] = {
            str(name): _prices(f"vendors.{vendor}.models.{name}", prices)
            for name, prices in entry["models"].items()
        }
    return PriceTable(date, hosts, models)


def _prices(where: str, prices: Any) -> Prices:
    if not isinstance(prices, dict) or "input" not in prices or "output" not in prices:
        raise ValueError(f"{where} needs at least input and output prices")
    for key, value in prices.items():
        if key not in PRICE_KEYS:
            raise ValueError(f"{where}.{key} is not a price (one of {', '.join(PRICE_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"{where}.{key} must be a number of dollars per million tokens")
    return {key: float(value) for key, value in prices.items()}


@functools.cache
def price_table() -> PriceTable:
    """The table shipped with the app, read once per process."""
    text = resources.files("agent").joinpath("data", TABLE_FILE).read_text(encoding="utf-8")
    return parse_table(yaml.safe_load(text))


def table_price(provider: ProviderConfig, model: str) -> Price | None:
    """The table's price of `model` on `provider`, or None when the table does not list it."""
    table = price_table()
    prices = table.prices(host(provider), model)
    if prices is None:
        return None
    includes_cache = provider.kind != "anthropic"
    return Price.of(prices, "table", input_includes_cache=includes_cache, dated=table.date)
