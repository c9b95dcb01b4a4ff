"""K1 credential pool rules and K2/K3 error sentences, without the network."""

from __future__ import annotations

import pytest

from agent.config import ProviderConfig
from agent.providers.credentials import Credential, CredentialPool
from agent.providers.errors import ProviderError, classify_status, redact, summarize


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def pool(n, clock=None):
    return CredentialPool([Credential(f"p:K{i}", f"sk-key-{i}-xxxxxxxx") for i in range(n)],
                          clock=clock or Clock())  # fmt: skip


def test_ids_are_stable_and_never_the_key(monkeypatch):
    monkeypatch.setenv("KA", "sk-aaaaaaaaaa")
    monkeypatch.setenv("KB", "sk-bbbbbbbbbb")
    config = ProviderConfig(name="p", api_keys_env=("KA", "KB"))
    ids = [e.id for e in CredentialPool.from_config(config).entries]
    assert ids == ["p:KA", "p:KB"] == [e.id for e in CredentialPool.from_config(config).entries]
    assert "sk-" not in repr(CredentialPool.from_config(config).entries)


def test_a_failure_is_charged_to_the_issuing_entry_even_after_the_pool_moved_on():
    clock = Clock()
    p = pool(3, clock)
    issued_a = p.current()
    issued_b = issued_a  # a concurrent request issued by the same entry
    assert p.report_failure(issued_a.id, 429, retry_after=10) is True
    assert p.current().id == "p:K1"
    # The late failure of the other request is charged to K0, not to K1 where the pool is now.
    assert p.report_failure(issued_b.id, 401) is True
    assert p.get("p:K0").failures == 2 and p.get("p:K1").failures == 0
    assert p.current().id == "p:K1"


def test_cooldowns_expire():
    clock = Clock()
    p = pool(2, clock)
    p.report_failure("p:K0", 429, retry_after=5)
    p.report_failure("p:K1", 429, retry_after=50)
    clock.now += 6
    assert p.current().id == "p:K0"


def test_rotating_a_one_entry_pool_is_reported_as_failure():
    p = pool(1)
    assert p.report_failure("p:K0", 429) is False
    assert p.report_failure("p:K0", 401) is False
    assert p.current().id == "p:K0"


def test_a_pool_whose_other_entries_cool_down_does_not_recover():
    p = pool(2)
    p.report_failure("p:K1", 429, retry_after=60)
    assert p.report_failure("p:K0", 429) is False


def test_other_statuses_do_not_rotate():
    p = pool(2)
    assert p.report_failure("p:K0", 500) is False
    assert p.current().id == "p:K0"


@pytest.mark.parametrize(
    "status, body, retry_after, needle, kind",
    [
        (401, {"error": {"message": "Incorrect API key"}}, None, "rejected the API key", "auth"),
        (429, {"error": {"message": "slow down"}}, 7.0, "try again in 7 s", "rate_limit"),
        (400, {"error": {"message": "maximum context length is 8192"}}, None, "/compact",
         "context_length"),
        (404, {"error": {"message": "no such model"}}, None, "pick another with /model",
         "not_found"),
        (503, "upstream down", None, "try again shortly", "server"),
        (401, {"error": {"code": 401, "message": "API key not valid",
                         "details": [{"reason": "API_KEY_INVALID"}]}}, None,
         "rejected the API key", "auth"),
        (401, {"error": {"details": [{"reason": "ACCESS_TOKEN_TYPE_UNSUPPORTED"}]}}, None,
         "mint a new Gemini API key", "gemini_legacy_key"),
        (401, {"error": {"message": "Expected OAuth 2 access token, login cookie"}}, None,
         "mint a new Gemini API key", "gemini_legacy_key"),
    ],
)  # fmt: skip
def test_errors_are_sentences_that_say_what_to_do(status, body, retry_after, needle, kind):
    error = classify_status(status, body, provider="p", model="m", retry_after=retry_after)
    assert error.kind == kind and needle in error.message


def test_adapter_guidance_survives_into_the_summary():
    error = classify_status(
        401, {"error": {"details": [{"reason": "ACCESS_TOKEN_TYPE_UNSUPPORTED"}]}},
        provider="gemini", model="m",
    )  # fmt: skip
    assert "mint a new Gemini API key" in summarize(error)
    assert summarize(ProviderError("x", "Do this.")) == "Do this."


def test_redaction_of_known_and_key_shaped_secrets():
    text = "key sk-abcdefghijklmnop and AIzaSyA1234567890123456789012 and Bearer tok_12345678"
    out = redact(text, ("tok_12345678",))
    assert "sk-abc" not in out and "AIza" not in out and "tok_1234" not in out
