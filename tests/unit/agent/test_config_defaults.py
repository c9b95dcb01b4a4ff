"""Honest defaults (issue 17 item 1): the demo runs only when nothing at all is configured."""

from __future__ import annotations

import pytest
import yaml

from agent.config import DEMO_PROVIDER, ConfigError, load_config, missing_key


def write(home, data) -> None:
    (home / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


HOSTED = {
    "model": "openai:gpt-4.1",
    "providers": {
        "openai": {
            "kind": "openai",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "MY_KEY",
        }
    },
}


def test_a_configured_hosted_model_without_its_key_is_not_the_demo(hermes_home, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    write(hermes_home, HOSTED)
    config = load_config()
    assert not config.demo and config.model == "openai:gpt-4.1"
    problem = config.missing_key()
    assert problem is not None
    assert "provider openai" in problem and "MY_KEY" in problem
    assert str(hermes_home / "config.yaml") in problem


def test_the_key_once_set_is_no_problem(hermes_home, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-abcdefgh12345678")
    write(hermes_home, HOSTED)
    assert load_config().missing_key() is None


@pytest.mark.parametrize("data", [None, {}, {"agent": {"approval": "yolo"}}, {"ui": {}}])
def test_nothing_configured_is_the_demo(hermes_home, data):
    if data is not None:
        write(hermes_home, data)
    config = load_config()
    assert config.demo and config.model.startswith(f"{DEMO_PROVIDER}:")
    assert config.missing_key() is None


def test_demo_on_request_wins_over_a_configured_model(hermes_home):
    write(hermes_home, HOSTED)
    config = load_config(demo=True)
    assert config.demo and config.missing_key() is None


def test_providers_without_a_model_or_a_key_name_the_missing_key(hermes_home):
    write(hermes_home, {"providers": {"work": {"kind": "anthropic"}}})
    config = load_config()
    assert not config.demo and config.model.startswith("work:")
    problem = config.missing_key()
    assert problem is not None and "provider work" in problem and "api_key_env" in problem


@pytest.mark.parametrize("host", ["127.0.0.1:11434", "localhost:8080", "[::1]:8000"])
def test_a_loopback_server_needs_no_key(hermes_home, host):
    provider = {"kind": "openai", "base_url": f"http://{host}/v1"}
    write(hermes_home, {"model": "local:llama", "providers": {"local": provider}})
    config = load_config()
    assert not config.demo and config.missing_key() is None
    assert missing_key(config.provider("local")) is None


def test_a_pool_of_key_variables_is_named_whole(hermes_home, monkeypatch):
    for name in ("KEY_A", "KEY_B"):
        monkeypatch.delenv(name, raising=False)
    provider = {"base_url": "https://x.example/v1", "api_keys_env": ["KEY_A", "KEY_B"]}
    write(hermes_home, {"model": "pool:m", "providers": {"pool": provider}})
    problem = load_config().missing_key()
    assert problem is not None and "KEY_A or KEY_B" in problem


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai:gpt-4.1", "OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openrouter:openai/gpt-4.1", "OPENROUTER_API_KEY"),
    ],
)
def test_a_well_known_provider_without_its_variable_names_the_variable(
    hermes_home, model, variable
):
    """`model: openai:…` with OPENAI_API_KEY unset: the variable to set, not 'not configured'."""
    write(hermes_home, {"model": model})
    with pytest.raises(ConfigError) as caught:
        load_config()
    sentence = str(caught.value)
    assert variable in sentence and "line 1" in sentence and "not configured" not in sentence


def test_model_flag_for_a_well_known_provider_names_the_variable(hermes_home):
    config = load_config()
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY in the environment"):
        config.provider("openai")
