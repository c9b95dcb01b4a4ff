"""Chat templates on a real llama.cpp server: QwQ streams reasoning, Qwen2.5 tool calls."""

from __future__ import annotations

import json

import pytest

from agent import events as ev
from agent.kinds import TurnStatus
from agent.tools.registry import ToolRegistry, default_registry

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]


def test_reasoning_that_spends_the_output_budget_says_so(real, llama):
    # The QwQ template opens a <think> block: everything this small model writes is reasoning.
    server = llama("Qwen-QwQ-32B.jinja")
    agent = real.agent(server, provider={"max_tokens": 24})
    result = agent.run_turn("Explain in detail how a car engine works.")
    reasoning = "".join(e.text for e in real.events if isinstance(e, ev.ReasoningDelta))
    assert reasoning.strip()
    assert result.status == TurnStatus.TRUNCATED
    assert "whole output budget thinking" in result.error and "max_tokens" in result.error
    requests = [e for e in real.events if isinstance(e, ev.RequestStarted)]
    assert len(requests) == 1  # not retried as an empty answer
    row = real.session(agent.session_id)
    assert row["api_call_count"] == 1 and row["output_tokens"] == 24


def test_a_tool_call_parsed_by_llama_cpp_runs_and_its_result_goes_back(real, llama):
    server = llama("Qwen-Qwen2.5-7B-Instruct.jinja")
    tools = ToolRegistry([default_registry().get("list_dir")])
    agent = real.agent(
        server,
        provider={"max_tokens": 60},
        agent={"system_prompt": "You are a helpful assistant.", "max_iterations": 2},
        registry=tools,
    )
    # This model repeats a call until its limit; a client's stop sequence ends it after one
    # (llama.cpp then reports finish_reason tool_calls), as an application may send one.
    agent.extra_body = {"stop": ["</tool_call>"]}
    result = agent.run_turn(
        'Respond with a tool call to list_dir for the path "." inside <tool_call></tool_call> tags.'
    )
    finished = [e for e in real.events if isinstance(e, ev.ToolFinished)]
    assert finished and finished[0].name == "list_dir" and finished[0].ok
    assert "notes.txt" in finished[0].output
    call = next(m for m in agent.messages if m.tool_calls).tool_calls[0]
    answer = next(m for m in agent.messages if m.role == "tool")
    assert answer.tool_call_id == call.id and json.loads(call.arguments) == {"path": "."}
    assert result.status in (TurnStatus.OK, TurnStatus.TRUNCATED, TurnStatus.BUDGET)
