"""Tool-call arguments the app cannot parse (5,000 levels deep, NaN, duplicate keys) are a
tool error the model reads, and the turn goes on: never "Internal error" (H10)."""

from __future__ import annotations

import json

import pytest
from helpers import write_config

from agent import events as ev
from agent.config import load_config
from agent.loop import Agent
from agent.scripted import Script, ScriptedServer

DEEP = '{"path": ' + "[" * 5_000 + "]" * 5_000 + "}"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "arguments, words",
    [(DEEP, "nested deeper than 64 levels"), ('{"path": NaN}', "NaN is not a JSON number")],
    ids=["5000 deep", "NaN"],
)
def test_unparsable_arguments_are_a_tool_error_and_the_turn_goes_on(
    hermes_home, tmp_path, wire, arguments, words
):
    """H10: the call gets a tool error naming what is wrong; the model's next reply ends the
    turn normally."""
    script = {
        "replies": [
            {"tool_calls": [{"id": "deep", "name": "list_dir", "arguments": arguments}]},
            {"text": "understood"},
        ]
    }
    events: list = []
    with ScriptedServer(Script.from_dict(script)) as server:
        write_config(hermes_home, server, wire=wire)
        agent = Agent(load_config(), sink=events.append, workspace=tmp_path)
        try:
            result = agent.run_turn("go")
        finally:
            agent.close()
        second = server.requests_for()[-1].raw.decode("utf-8")
    assert result.status == "ok", result.error
    assert result.text == "understood"
    finished = [e for e in events if isinstance(e, ev.ToolFinished)]
    assert len(finished) == 1 and not finished[0].ok
    assert words in finished[0].output
    assert not any(isinstance(e, ev.TurnError) for e in events)
    assert words in json.dumps(json.loads(second))  # the model read the sentence


def test_a_stream_chunk_nested_5000_deep_is_a_malformed_reply_retried(hermes_home, tmp_path):
    """H10, W11: a provider chunk the parser cannot take is a malformed attempt, retried
    like any malformed chunk, then one sentence: never "Internal error"."""
    deep = {"raw_sse": ['data: {"choices": ' + "[" * 5_000 + "]" * 5_000 + "}\n\n"]}
    script = {"replies": [deep] * 8}
    with ScriptedServer(Script.from_dict(script)) as server:
        write_config(hermes_home, server)
        agent = Agent(load_config(), workspace=tmp_path)
        try:
            result = agent.run_turn("go")
        finally:
            agent.close()
        attempts = len(server.requests_for())
    assert result.status == "error"
    assert "Internal error" not in result.error and "does not parse" in result.error
    assert 2 <= attempts <= 8


def test_a_mcp_json_nested_5000_deep_is_skipped_with_a_sentence(tmp_path):
    """H10: a repository's .mcp.json the parser cannot take skips its servers, saying why."""
    from agent.mcp.settings import read_project_servers

    (tmp_path / ".mcp.json").write_text('{"mcpServers": ' + "[" * 5_000 + "]" * 5_000 + "}")
    servers, notes = read_project_servers(tmp_path)
    assert servers == [] and notes == [
        ".mcp.json: nested too deeply to read; its servers are skipped."
    ]
