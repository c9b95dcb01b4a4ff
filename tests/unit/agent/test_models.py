"""Context windows and token estimates of a model (agent/models.py)."""

from __future__ import annotations

from pathlib import Path

from agent.config import Config, ProviderConfig
from agent.messages import Message, ToolCall
from agent.models import (
    DEFAULT_CONTEXT_WINDOW,
    context_window,
    context_window_for,
    estimate_tokens,
    tokens_for_chars,
)


def test_window_from_config_then_table_then_safe_default():
    assert context_window(ProviderConfig("p", context_window=12345), "gpt-4o") == 12345
    assert context_window(ProviderConfig("p"), "gpt-4o-mini") == 128_000
    assert context_window(ProviderConfig("p"), "anthropic/claude-sonnet-4-5") == 200_000
    assert context_window(ProviderConfig("p"), "my-local-model") == DEFAULT_CONTEXT_WINDOW
    assert context_window(None, "my-local-model") == DEFAULT_CONTEXT_WINDOW


def test_window_of_a_model_ref_under_a_config():
    config = Config(
        home=Path("."),
        model="sized:anything",
        providers={"sized": ProviderConfig("sized", context_window=50_000)},
    )
    assert context_window_for(config, "sized:gpt-4o") == 50_000
    assert context_window_for(config, "unknown:gpt-4o") == 128_000


def test_estimates_are_four_characters_a_token_and_skip_display_rows():
    assert tokens_for_chars(0) == 0
    assert tokens_for_chars(1) == 1
    assert tokens_for_chars(8) == 2
    call = ToolCall("c1", "read_file", '{"path": "a"}')
    messages = [
        Message("user", "x" * 40),
        Message("assistant", "", tool_calls=[call]),
        Message("assistant", display_kind="model_switch", display_metadata={}),
    ]
    chars = 40 + len("read_file") + len('{"path": "a"}')
    assert estimate_tokens(messages, system="s" * 8) == (chars + 8) // 4 + 4 * 2
