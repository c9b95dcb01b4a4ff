"""The `/model` view's lines: long lists cut, a sentence for each provider that lists nothing."""

from agent.config import ProviderConfig
from agent.providers.discovery import ModelListing
from hermes_tui.commands.model_list import SHOWN_PER_PROVIDER, listing_lines

PROVIDERS = {
    "hosted": ProviderConfig("hosted", kind="openai"),
    "local": ProviderConfig("local", base_url="http://user:pw@127.0.0.1:8080/v1"),
    "odd": ProviderConfig("odd", base_url="http://127.0.0.1:9/v1"),
}


def test_a_long_list_is_cut_and_says_how_many_more():
    models = tuple(f"m{i}" for i in range(SHOWN_PER_PROVIDER + 30))
    lines = listing_lines("hosted:m0", [ModelListing("hosted", models)], PROVIDERS)
    assert lines[1].startswith("  hosted: m0 (in use), m1, ")
    assert lines[1].endswith(", and 30 more")
    assert lines[-1] == "Switch with /model provider:model (Tab completes it)."


def test_a_provider_without_models_gets_one_sentence_without_credentials():
    listings = [
        ModelListing("local", problem="the server lists no models"),
        ModelListing("odd", problem="the server did not answer in time"),
        ModelListing("hosted", problem="SSLError"),
    ]
    lines = listing_lines("local:x", listings, PROVIDERS)
    assert lines[1:4] == [
        "  local: the server at http://127.0.0.1:8080/v1 lists no models.",
        "  odd: the server at http://127.0.0.1:9/v1 did not answer; is it running?",
        "  hosted: its models could not be listed (SSLError).",
    ]


def test_a_hosted_provider_without_a_key_is_not_asked_and_says_why(hermes_home, monkeypatch):
    from types import SimpleNamespace

    from hermes_tui.completion.models import ModelCatalog

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    providers = {
        "hosted": ProviderConfig("hosted", kind="openai", api_key_env="OPENAI_API_KEY"),
        "keyed": ProviderConfig("keyed", kind="openai", api_key="k"),
        "local": ProviderConfig("local", base_url="http://127.0.0.1:8080/v1"),
    }
    asked: list[list[str]] = []

    def list_every(which):
        asked.append(sorted(which))
        return [ModelListing(name, ("m",)) for name in which]

    config = SimpleNamespace(providers=providers, model="local:m")
    listings = ModelCatalog(config, list_every=list_every).list_all()
    assert asked == [["keyed", "local"]]
    assert [listing.provider for listing in listings] == ["hosted", "keyed", "local"]
    lines = listing_lines("local:m", listings, providers)
    assert lines[1] == (
        "  hosted: no API key is set (api_key or its environment variable), so not asked."
    )
