"""Where the prompt-cache breakpoints go ($1): the rules of agent/providers/cache_points.py."""

from __future__ import annotations

from agent.config import ProviderConfig, ProviderKind
from agent.providers.cache_points import (
    MAX_BREAKPOINTS,
    breakpoints,
    mark_anthropic,
    mark_openrouter,
    uses_breakpoints,
)


def _provider(kind: str = "openai", **kw) -> ProviderConfig:
    return ProviderConfig(name="p", kind=ProviderKind(kind), **kw)


def test_breakpoints_go_to_anthropic_and_to_anthropic_models_on_openrouter_only():
    """$1: Anthropic's wire and OpenRouter's Anthropic models; the provider's setting wins."""
    assert uses_breakpoints(_provider("anthropic"), "claude-sonnet-4-5", "api.anthropic.com")
    assert uses_breakpoints(_provider(), "anthropic/claude-sonnet-4.5", "openrouter.ai")
    assert not uses_breakpoints(_provider(), "openai/gpt-4.1", "openrouter.ai")
    assert not uses_breakpoints(_provider(), "anthropic/claude-sonnet-4.5", "api.openai.com")
    off = _provider("anthropic", cache_breakpoints=False)
    assert not uses_breakpoints(off, "claude-sonnet-4-5", "api.anthropic.com")
    on = _provider(cache_breakpoints=True)
    assert uses_breakpoints(on, "claude-via-proxy", "127.0.0.1")


def _turn(role: str, *types: str) -> dict:
    return {"role": role, "content": [{"type": t, "text": t} for t in types]}


def test_never_more_than_four_and_never_on_a_thinking_block():
    """$1: four at most (tools, system, two sliding); a thinking block is stepped over."""
    kwargs = {
        "tools": [{"name": "a"}, {"name": "b"}],
        "system": "you are hermes",
        "messages": [
            _turn("user", "text"),
            _turn("assistant", "text"),
            _turn("user", "text"),
            _turn("assistant", "thinking", "tool_use"),
            _turn("user", "tool_result", "thinking"),  # no such turn, but never marked there
        ],
    }
    mark_anthropic(kwargs)
    assert breakpoints(kwargs) == [
        "tools[1]",
        "system[0]",
        "messages[2].content[0]",
        "messages[4].content[0]",
    ]
    assert len(breakpoints(kwargs)) == MAX_BREAKPOINTS


def test_without_tools_or_system_the_sliding_marks_stay_two():
    kwargs = {
        "messages": [_turn("user", "text"), _turn("assistant", "text"), _turn("user", "text")]
    }
    mark_anthropic(kwargs)
    assert breakpoints(kwargs) == ["messages[0].content[0]", "messages[2].content[0]"]


def test_openrouter_parts_are_lists_whether_marked_or_not():
    """T7: a message keeps its bytes when its mark moves on (text becomes parts always)."""
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "third"},
    ]
    mark_openrouter(messages)
    assert breakpoints({"messages": messages}) == [
        "messages[0].content[0]",
        "messages[3].content[0]",
        "messages[5].content[0]",
    ]
    assert messages[1]["content"] == [{"type": "text", "text": "first"}]
    assert messages[2]["content"] == "ok"  # the model's own turns are left as they are
