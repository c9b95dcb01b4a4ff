"""A call's cost ($2): the user's prices, else a server's report, else a local server (free)
or the built-in dated table; unknown without any (never a guess)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.config import ConfigError, ProviderConfig, ProviderKind, load_config
from agent.price_table import parse_table, price_table
from agent.pricing import Price, cost_of, price_for, prices_for
from agent.providers.base import UsagePart

PRICES = {"input": 2.0, "output": 8.0, "cache_read": 0.5}


def _provider(base_url: str | None, kind: str = "openai", **kw) -> ProviderConfig:
    return ProviderConfig(name="p", kind=ProviderKind(kind), base_url=base_url, **kw)


def test_openai_usage_counts_cached_tokens_inside_the_input():
    price = Price.of(PRICES, "config", input_includes_cache=True, dated=None)
    usage = UsagePart(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=400_000)
    cost, estimated = price.cost(usage)
    assert cost == pytest.approx(600_000 * 2e-6 + 100_000 * 8e-6 + 400_000 * 0.5e-6)
    assert not estimated


def test_anthropic_usage_counts_cache_reads_and_writes_apart():
    price = Price.of(PRICES, "config", input_includes_cache=False, dated=None)
    usage = UsagePart(
        input_tokens=1_000, output_tokens=10, cache_read_tokens=50_000, cache_write_tokens=2_000
    )
    # No cache_write price: it is charged at the input price.
    assert price.cost(usage)[0] == pytest.approx(
        (1_000 * 2 + 10 * 8 + 50_000 * 0.5 + 2_000 * 2) / 1e6
    )


def test_no_price_means_unknown_and_star_covers_other_models():
    assert cost_of(UsagePart(input_tokens=10, output_tokens=10), None) is None
    pricing = {"big": {"input": 10.0}, "*": {"input": 1.0}}
    assert prices_for(pricing, "big") == {"input": 10.0}
    assert prices_for(pricing, "small") == {"input": 1.0}
    assert prices_for({"big": {"input": 10.0}}, "small") is None
    # A model the table does not list, on a server nobody recognised: unknown.
    assert price_for(_provider("http://127.0.0.1:9/v1"), "my-model") is None


def test_known_models_have_a_dated_table_price_marked_estimated():
    """$2: the table prices a known model of each vendor, by the host its provider calls."""
    table = price_table()
    gpt = price_for(_provider("https://api.openai.com/v1"), "gpt-4.1")
    assert gpt is not None and gpt.source == "table" and gpt.dated == table.date
    assert (gpt.input, gpt.output, gpt.cache_read) == (2.0, 8.0, 0.5)
    usage = UsagePart(input_tokens=1_000_000, output_tokens=0)
    assert cost_of(usage, gpt).estimated and gpt.cost(usage) == (2.0, True)
    # Anthropic with no base_url is the SDK's host; a dated model id finds its family.
    claude = price_for(_provider(None, "anthropic"), "claude-sonnet-4-5-20250929")
    assert claude is not None and claude.source == "table"
    assert (claude.cache_read, claude.cache_write) == (0.30, 3.75)
    assert not claude.input_includes_cache
    for url, model in [
        ("https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.5-pro"),
        ("https://api.x.ai/v1", "grok-4"),
        ("https://openrouter.ai/api/v1", "anthropic/claude-sonnet-4.5"),
        ("https://inference-api.nousresearch.com/v1", "Hermes-4-405B"),
    ]:
        found = price_for(_provider(url), model)
        assert found is not None and found.source == "table", (url, model)
    # The provider's name is not its vendor: "openai" on this machine is not OpenAI's list.
    named = ProviderConfig(name="openai", base_url="http://localhost:8080/v1")
    assert price_for(named, "gpt-4.1") is None


def test_the_users_prices_win_over_the_table():
    """$2: a provider's `pricing:` overrides the table for that model."""
    provider = _provider("https://api.openai.com/v1", pricing={"gpt-4.1": {"input": 1.0}})
    price = price_for(provider, "gpt-4.1")
    assert price is not None and price.source == "config" and price.input == 1.0
    assert not cost_of(UsagePart(input_tokens=10), price).estimated
    # Other models of that provider keep the table's price.
    other = price_for(provider, "gpt-4o")
    assert other is not None and other.source == "table"


def test_a_server_reported_cost_wins_over_the_table_but_not_over_the_users_prices():
    """$2: OpenRouter's `usage.cost` is the call's cost unless the user set prices."""
    usage = UsagePart(input_tokens=1_000_000, output_tokens=0, reported_cost=0.25)
    table = price_for(_provider("https://openrouter.ai/api/v1"), "openai/gpt-4.1")
    reported = cost_of(usage, table)
    assert reported is not None and (reported.usd, reported.source) == (0.25, "server")
    assert not reported.estimated
    assert cost_of(usage, None) == reported  # a model the table does not know
    mine = Price.of({"input": 1.0, "output": 1.0}, "config", input_includes_cache=True, dated=None)
    assert cost_of(usage, mine).usd == pytest.approx(1.0)  # type: ignore[union-attr]


def test_the_shipped_table_is_dated_and_well_formed():
    table = price_table()
    assert table.date[:2] == "20" and len(table.date) == 10
    assert set(table.models) >= {"openai", "anthropic", "gemini", "xai", "openrouter", "nous"}
    assert all(prices["input"] >= 0 for m in table.models.values() for prices in m.values())


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"vendors": {}}, "date"),
        (
            {"date": "2026-01-01", "vendors": {"v": {"models": {"m": {"input": 1}}}}},
            "vendors.v.models.m",
        ),
        (
            {"date": "2026-01-01", "vendors": {"v": {"models": {"m": {"input": 1, "output": -1}}}}},
            "vendors.v.models.m.output",
        ),
        (
            {
                "date": "2026-01-01",
                "vendors": {"v": {"models": {"m": {"input": 1, "output": 1, "cheap": 0}}}},
            },
            "vendors.v.models.m.cheap",
        ),
    ],
)
def test_a_bad_table_entry_is_named(data, words):
    with pytest.raises(ValueError) as caught:
        parse_table(data)
    assert words in str(caught.value)


def _config(home: Path, pricing: object) -> None:
    provider = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
    provider["pricing"] = pricing
    config = {"model": "p:m", "providers": {"p": provider}}
    (home / "config.yaml").write_text(yaml.safe_dump(config))


def test_pricing_loads_and_bad_prices_name_the_key(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HERMES_TUI_HOME", str(tmp_path))
    _config(tmp_path, {"m": {"input": 3, "output": 15}})
    assert load_config().provider("p").pricing == {"m": {"input": 3.0, "output": 15.0}}
    for bad, words in [
        ({"m": {"inptu": 3}}, "providers.p.pricing.m.inptu"),
        ({"m": {"input": "cheap"}}, "providers.p.pricing.m.input"),
        ({"m": {"input": -1}}, "providers.p.pricing.m.input"),
        ({"m": 3}, "providers.p.pricing.m"),
        (["m"], "providers.p.pricing"),
    ]:
        _config(tmp_path, bad)
        with pytest.raises(ConfigError) as caught:
            load_config()
        assert words in str(caught.value) and "config.yaml" in str(caught.value)


def test_a_resumed_sessions_cost_keeps_its_table_mark():
    """$2: a session resumed on a model the table prices shows its stored cost with `~`."""
    from agent.usage import Usage

    row = {"provider": "openai", "model": "gpt-4.1", "estimated_cost_usd": 0.5}
    table = {"openai": ProviderConfig(name="openai", base_url="https://api.openai.com/v1")}
    assert Usage.of_session(row, table).cost_from_table
    mine = {
        "openai": ProviderConfig(
            name="openai", base_url="https://api.openai.com/v1", pricing={"*": {"input": 1.0}}
        )
    }
    assert not Usage.of_session(row, mine).cost_from_table
    assert not Usage.of_session({**row, "estimated_cost_usd": None}, table).cost_from_table
