"""Context windows and token estimates of a model (agent/models.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import Config, ProviderConfig
from agent.messages import REQUEST_FAILED, Message, ToolCall
from agent.models import (
    context_window,
    context_window_for,
    estimate_tokens,
    tokens_for_chars,
    window_and_source,
)
from agent.providers.discovery import SERVERS


@pytest.fixture(autouse=True)
def _no_server_answers():
    SERVERS.clear()
    yield
    SERVERS.clear()


def test_window_from_config_then_table_else_unknown():
    assert context_window(ProviderConfig("p", context_window=12345), "gpt-4o") == 12345
    assert context_window(ProviderConfig("p"), "gpt-4o-mini") == 128_000
    assert context_window(ProviderConfig("p"), "anthropic/claude-sonnet-4-5") == 200_000
    # Nobody knows a local model's window: unknown, never an assumed number.
    assert window_and_source(ProviderConfig("p"), "my-local-model") == (None, "unknown")
    assert context_window(None, "my-local-model") is None


def test_the_server_answers_before_the_table_and_config_before_the_server():
    local = ProviderConfig("local", base_url="http://127.0.0.1:8080/v1")
    SERVERS.learn_window(local, "qwen2.5", 4096, "llama.cpp /props")
    # The table says 32,768 for qwen; the server runs it with 4,096: the server wins.
    assert window_and_source(local, "qwen2.5") == (4096, "llama.cpp /props")
    sized = ProviderConfig("local", base_url="http://127.0.0.1:8080/v1", context_window=2048)
    SERVERS.learn_window(sized, "qwen2.5", 4096, "llama.cpp /props")
    assert window_and_source(sized, "qwen2.5") == (2048, "config")


def test_window_of_a_model_ref_under_a_config():
    config = Config(
        home=Path("."),
        model="sized:anything",
        providers={"sized": ProviderConfig("sized", context_window=50_000)},
    )
    assert context_window_for(config, "sized:gpt-4o") == 50_000
    assert context_window_for(config, "unknown:gpt-4o") == 128_000


def test_estimates_are_four_characters_a_token_and_skip_display_and_withheld_rows():
    assert tokens_for_chars(0) == 0
    assert tokens_for_chars(1) == 1
    assert tokens_for_chars(8) == 2
    call = ToolCall("c1", "read_file", '{"path": "a"}')
    messages = [
        Message("user", "x" * 40),
        Message("assistant", "", tool_calls=[call]),
        Message("assistant", display_kind="model_switch", display_metadata={}),
        Message("user", "y" * 400, withheld=True),
        Message("assistant", display_kind=REQUEST_FAILED, display_metadata={"withheld": 1}),
    ]
    chars = 40 + len("read_file") + len('{"path": "a"}')
    assert estimate_tokens(messages, system="s" * 8) == (chars + 8) // 4 + 4 * 2
