"""Cost of a call from configured prices; unknown without them (never a guess)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.config import ConfigError, load_config
from agent.pricing import call_cost, prices_for

PRICES = {"input": 2.0, "output": 8.0, "cache_read": 0.5}


def test_openai_usage_counts_cached_tokens_inside_the_input():
    cost = call_cost(
        PRICES,
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=400_000,
        input_includes_cache=True,
    )
    assert cost == pytest.approx(600_000 * 2e-6 + 100_000 * 8e-6 + 400_000 * 0.5e-6)


def test_anthropic_usage_counts_cache_reads_and_writes_apart():
    cost = call_cost(
        PRICES,
        input_tokens=1_000,
        output_tokens=10,
        cache_read_tokens=50_000,
        cache_write_tokens=2_000,
        input_includes_cache=False,
    )
    # No cache_write price: it is charged at the input price.
    assert cost == pytest.approx((1_000 * 2 + 10 * 8 + 50_000 * 0.5 + 2_000 * 2) / 1e6)


def test_no_price_means_unknown_and_star_covers_other_models():
    assert call_cost(None, input_tokens=10, output_tokens=10, input_includes_cache=True) is None
    pricing = {"big": {"input": 10.0}, "*": {"input": 1.0}}
    assert prices_for(pricing, "big") == {"input": 10.0}
    assert prices_for(pricing, "small") == {"input": 1.0}
    assert prices_for({"big": {"input": 10.0}}, "small") is None


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
