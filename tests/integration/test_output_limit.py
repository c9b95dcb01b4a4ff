"""An answer cut off at the output limit before any text is not "an empty answer" (A6):
reasoning that spent the whole budget says so and how to fix it, and is not asked again."""

from __future__ import annotations

import pytest
from test_headless_errors import run_cli, serve  # noqa: F401  (serve is a fixture)

from agent import events as ev

WIRES = ["openai", "anthropic"]
THINKING = "Let me think about this step by step. " * 8


@pytest.mark.parametrize("wire", WIRES)
def test_reasoning_that_spends_the_budget_is_reported_once_and_not_retried(harness, wire):
    replies = [{"reasoning": THINKING, "finish_reason": "length"}] * 2
    agent = harness.start(
        {"replies": replies}, wire=wire, provider={"max_tokens": 300, "thinking_budget": 1024}
    )
    result = agent.run_turn("hello")
    assert result.status == "truncated"
    assert "whole output budget thinking" in result.error
    assert "providers.scripted.max_tokens` (now 300)" in result.error
    assert "thinking_budget` (1024)" in result.error
    assert len(harness.server.requests) == 1  # no second request spent on an "empty" retry
    notices = [e for e in harness.events if isinstance(e, ev.Notice)]
    assert [n.text for n in notices] == [result.error]
    # Nothing was answered, so nothing but the question is stored (A6).
    assert [r["role"] for r in harness.rows(result.session_id)] == ["user"]


def test_a_cut_off_before_any_text_without_reasoning_says_so(harness):
    agent = harness.start({"replies": [{"text": "", "finish_reason": "length"}]})
    result = agent.run_turn("hello")
    assert result.status == "truncated"
    assert "cut off at the model's output limit before it began" in result.error
    assert "thinking" not in result.error
    assert len(harness.server.requests) == 1


@pytest.mark.parametrize(
    ("reply", "needle"),
    [
        ({"text": "half an answ", "finish_reason": "length"}, "cut off"),
        ({"reasoning": THINKING, "finish_reason": "length"}, "output budget thinking"),
    ],
)
def test_headless_prints_the_cut_off_warning_once(hermes_home, serve, reply, needle):  # noqa: F811
    serve([reply])
    proc = run_cli(hermes_home, "run", "hello")
    assert proc.returncode == 4, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if needle in line]
    assert len(lines) == 1, proc.stderr
