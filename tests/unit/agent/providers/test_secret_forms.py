"""agent/providers/secret_forms.py: a configured key is redacted in base64 (each alignment,
both alphabets), hex and percent-encoding too (H9); and the edges of the plain search
(H5): a padded credential parameter, an `@` inside a URL password, an 8-character key."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from agent.config import Config, ProviderConfig
from agent.credentials import safe_url, url_secrets
from agent.providers.errors import MIN_SECRET_LENGTH, REDACTED, redact, register_secret
from agent.providers.secret_forms import encoded_forms
from agent.secrets import Secrets

KEY = "sk-live-0123456789abcdef"


@pytest.mark.parametrize("lead", ["", "a", "ab"])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_a_key_in_base64_is_redacted_at_each_alignment(lead, encode):
    """`base64 -w0 config.yaml`: the key starts at byte 0, 1 or 2 of a 3-byte group."""
    blob = encode(f"{lead}providers: {{x: {{api_key: {KEY}}}}}\n".encode()).decode()
    # 12 bytes of the key read as 16 whole characters at whichever alignment it has.
    runs = [encode(KEY[j : j + 12].encode()).decode() for j in range(3)]
    assert any(run in blob for run in runs)
    assert redact(blob) == blob  # not key-shaped as it is: only the key's own forms match
    redacted = redact(blob, (KEY,))
    assert REDACTED in redacted
    assert not any(run in redacted for run in runs)


def test_the_forms_are_the_stable_runs_of_each_alignment():
    forms = encoded_forms("abcdefgh", MIN_SECRET_LENGTH)
    assert "YWJjZGVmZ2" in forms  # at byte 0: the last character mixes in the next byte
    assert all(len(form) >= MIN_SECRET_LENGTH for form in forms)
    assert "abcdefgh" not in forms


@pytest.mark.parametrize("spell", [str.lower, str.upper])
def test_a_key_in_hex_is_redacted(spell):
    dumped = f"key={spell(KEY.encode().hex())};"
    assert redact(dumped, (KEY,)) == f"key={REDACTED};"


def test_a_key_percent_encoded_is_redacted():
    key = "p@ss/word+with=chars"
    assert redact(f"u={quote(key, safe='')}&x=1", (key,)) == f"u={REDACTED}&x=1"
    assert redact(f"u={quote_plus('pass word-0123')}", ("pass word-0123",)) == f"u={REDACTED}"


def test_secrets_redact_every_form_of_a_configured_key():
    config = Config(Path("/nonexistent"), "p:m", {"p": ProviderConfig(name="p", api_key=KEY)})
    secrets = Secrets.of(config, environ={})
    for text in (base64.b64encode(f"x{KEY}".encode()).decode(), KEY.encode().hex()):
        assert REDACTED in secrets.redact(text)


# -- the plain search's edges ---------------------------------------------------------------


def test_a_padded_credential_parameter_is_kept_whole():
    assert url_secrets("https://h/v1?api_key=YWJjZGVmZ2g==") == ("YWJjZGVmZ2g==",)
    assert (
        safe_url("https://h/v1?api_key=YWJjZGVmZ2g==&v=2") == "https://h/v1?api_key=[redacted]&v=2"
    )


def test_an_at_sign_inside_a_url_password():
    url = "http://alice:p@ss-word-9@db.example:5432/x"
    assert "p@ss-word-9" in url_secrets(url)
    assert safe_url(url) == "http://db.example:5432/x"


def test_an_eight_character_key_is_a_key():
    key = "Zq8kW2pX"
    assert len(key) == MIN_SECRET_LENGTH
    assert redact(f"got {key} back", (key,)) == f"got {REDACTED} back"
    config = Config(Path("/nonexistent"), "p:m", {"p": ProviderConfig(name="p", api_key=key)})
    assert key in Secrets.of(config, environ={}).values
    register_secret("Yh7jR3mQ")
    assert redact("a Yh7jR3mQ b") == f"a {REDACTED} b"
