"""Script format and reply selection of the scripted model server."""

from __future__ import annotations

import json

import pytest

from agent.scripted import Reply, RequestInfo, Script, ScriptPlayer, ToolCall


def openai_req(*messages, tools=None, model="m", system=None):
    msgs = list(messages)
    if system:
        msgs.insert(0, {"role": "system", "content": system})
    body = {"model": model, "messages": msgs}
    if tools:
        body["tools"] = tools
    return RequestInfo.from_body("openai", body, json.dumps(body).encode())


def user(text):
    return {"role": "user", "content": text}


def test_from_dict_parses_tool_calls_and_knobs():
    script = Script.from_dict(
        {
            "loop": True,
            "defaults": {"chunk_size": 3, "delay": 0.5},
            "reasoning_key": "reasoning",
            "replies": [
                {
                    "reasoning": "r",
                    "text": "t",
                    "tool_calls": [
                        {"id": "c1", "name": "read", "arguments": {"path": "a"}},
                        {"name": "bad", "arguments": "{not json"},
                    ],
                    "stall": 1.5,
                    "stall_after": 2,
                }
            ],
        }
    )
    assert script.loop and script.reasoning_key == "reasoning"
    reply = script.replies[0]
    assert reply.tool_calls[0] == ToolCall(name="read", arguments={"path": "a"}, id="c1")
    assert reply.tool_calls[1].id is None
    assert reply.tool_calls[1].arguments_json == "{not json"
    assert reply.tool_calls[0].arguments_json == '{"path": "a"}'
    assert reply.stall == 1.5 and reply.stall_after == 2


@pytest.mark.parametrize(
    "data",
    [
        {"replies": [{"txt": "typo"}]},
        {"replies": [{"match": {"role": "user"}}]},
        {"replies": [], "defaults": {"colour": 1}},
        {"replies": [], "reasoning_key": "thoughts"},
        {"replies": [{"tool_calls": [{"arguments": {}}]}]},
        {"replies": [], "extra": 1},
    ],
)
def test_from_dict_rejects_unknown_keys(data):
    with pytest.raises(ValueError):
        Script.from_dict(data)


def test_from_yaml(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("replies:\n  - text: hello\n    chunk_size: 2\n")
    script = Script.from_yaml(path)
    assert script.replies == [Reply(text="hello", chunk_size=2)]


def test_ordered_replies_are_consumed_then_exhausted():
    player = ScriptPlayer(Script.from_dict({"replies": [{"text": "a"}, {"text": "b"}]}))
    req = openai_req(user("hi"))
    assert player.pick(req).text == "a"
    assert player.pick(req).text == "b"
    assert player.pick(req) is None


def test_loop_starts_over():
    player = ScriptPlayer(
        Script.from_dict({"loop": True, "replies": [{"text": "a"}, {"text": "b"}]})
    )
    req = openai_req(user("hi"))
    assert [player.pick(req).text for _ in range(5)] == ["a", "b", "a", "b", "a"]


def test_matched_replies_are_reusable_and_take_priority_in_order():
    script = Script.from_dict(
        {
            "replies": [
                {"text": "tool answer", "match": {"last_role": "tool"}},
                {"text": "first"},
                {"text": "fallback", "match": {"last_role": "user"}},
            ]
        }
    )
    player = ScriptPlayer(script)
    tool_req = openai_req(user("x"), {"role": "tool", "tool_call_id": "c", "content": "ok"})
    assert player.pick(tool_req).text == "tool answer"
    assert player.pick(tool_req).text == "tool answer"
    assert player.pick(openai_req(user("x"))).text == "first"
    assert player.pick(openai_req(user("x"))).text == "fallback"
    assert player.pick(openai_req(user("x"))).text == "fallback"


def test_match_rules():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    cases = [
        ({"last_user_contains": "needle"}, openai_req(user("a needle here")), True),
        ({"last_user_contains": "needle"}, openai_req(user("nothing")), False),
        ({"any_contains": "SECRET"}, openai_req(user("x"), system="SECRET sys"), True),
        ({"any_contains": "héllo"}, openai_req(user("héllo")), True),
        ({"wire": "anthropic"}, openai_req(user("x")), False),
        ({"wire": "openai"}, openai_req(user("x")), True),
        ({"model": "big"}, openai_req(user("x"), model="big"), True),
        ({"model": "big"}, openai_req(user("x"), model="small"), False),
        ({"has_tools": True}, openai_req(user("x"), tools=tools), True),
        ({"has_tools": True}, openai_req(user("x")), False),
        ({"has_tools": False}, openai_req(user("x")), True),
        ({"system_contains": "pirate"}, openai_req(user("x"), system="be a pirate"), True),
        ({"system_contains": "pirate"}, openai_req(user("pirate")), False),
        ({"last_role": "user", "model": "m"}, openai_req(user("x")), True),
        ({"last_role": "user", "model": "zz"}, openai_req(user("x")), False),
    ]
    for rule, req, expected in cases:
        assert Reply(text="t", match=rule).matches(req) is expected, rule


def test_anthropic_tool_result_turn_maps_to_tool_role():
    body = {
        "model": "claude",
        "system": [{"type": "text", "text": "You are terse."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
            },
        ],
    }
    info = RequestInfo.from_body("anthropic", body, json.dumps(body).encode())
    assert info.last_role == "tool"
    assert info.last_user_text == "list files"
    assert info.system_text == "You are terse."
    plain = RequestInfo.from_body("anthropic", {"messages": [user("hey")], "system": "S"})
    assert plain.last_role == "user" and plain.last_user_text == "hey"
    assert plain.system_text == "S"


def test_openai_content_parts_and_stream_flags():
    body = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "part"}]}],
    }
    info = RequestInfo.from_body("openai", body)
    assert info.last_user_text == "part" and info.stream and info.include_usage


def test_nothing_eligible_even_after_loop_is_exhausted():
    script = Script.from_dict({"loop": True, "replies": [{"text": "t", "match": {"model": "x"}}]})
    assert ScriptPlayer(script).pick(openai_req(user("hi"))) is None


def test_echo_and_defaults():
    script = Script.from_dict(
        {"defaults": {"chunk_size": 5, "delay": 0.25}, "replies": [{"echo": True, "delay": 0}]}
    )
    reply = ScriptPlayer(script).pick(openai_req(user("ping")))
    assert reply.text == "echo: ping"
    assert reply.chunk_size == 5
    assert reply.delay == 0  # the reply's own value wins over the default


def test_default_chunk_size_without_defaults():
    reply = ScriptPlayer(Script.from_dict({"replies": [{"text": "x"}]})).pick(openai_req(user("")))
    assert reply.chunk_size == 12


def test_id_placeholder_counts_per_player_across_set_script():
    data = {
        "loop": True,
        "replies": [
            {
                "tool_calls": [
                    {"id": "call_{n}", "name": "a"},
                    {"id": "fixed", "name": "b"},
                    {"id": "call_{n}", "name": "c"},
                ]
            }
        ],
    }
    player = ScriptPlayer(Script.from_dict(data))
    req = openai_req(user("x"))
    ids = [c.id for c in player.pick(req).tool_calls] + [c.id for c in player.pick(req).tool_calls]
    assert ids == ["call_1", "fixed", "call_2", "call_3", "fixed", "call_4"]
    player.set_script(Script.from_dict(data))
    assert player.pick(req).tool_calls[0].id == "call_5"


def test_set_script_resets_consumption():
    script = Script.from_dict({"replies": [{"text": "a"}]})
    player = ScriptPlayer(script)
    req = openai_req(user("x"))
    assert player.pick(req).text == "a"
    assert player.pick(req) is None
    player.set_script(script)
    assert player.pick(req).text == "a"


def test_demo_script_plays_a_tour_forever():
    script = Script.load_demo()
    assert script.loop
    player = ScriptPlayer(script)
    first = player.pick(openai_req(user("hello")))
    assert first.reasoning and first.text
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("list_dir", {"path": "."})]
    tool_turn = openai_req(
        user("hello"),
        {"role": "assistant", "tool_calls": []},
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "a.py"},
    )
    second = player.pick(tool_turn)
    assert not second.tool_calls
    for needle in ("## ", "- ", "```yaml", "demo model", "config.yaml", "OPENAI_API_KEY"):
        assert needle in second.text, needle
    # What a user can act on: no machine path (theirs differs), no SDK snippet to paste.
    for needle in ("~/", "/home/", ".config/", "```python", "import "):
        assert needle not in second.text, needle
    again = player.pick(openai_req(user("more")))
    assert again.tool_calls[0].id != first.tool_calls[0].id


def test_raw_sse_pieces_are_sent_verbatim_and_repeats_in_chunks():
    from agent.scripted.wire_raw import CHUNK, raw_chunks

    reply = Reply.from_dict({"raw_sse": ["data: ", {"repeat": "ab", "times": CHUNK}, "\n\n"]})
    chunks = list(raw_chunks(reply.raw_sse))
    assert b"".join(chunks) == b"data: " + b"ab" * CHUNK + b"\n\n"
    assert max(len(c) for c in chunks) <= CHUNK  # a long repeat never sits in memory whole


@pytest.mark.parametrize(
    "raw",
    [
        "data: x",
        [{"repeat": "", "times": 3}],
        [{"repeat": "x"}],
        [{"repeat": "x", "times": -1}],
        [3],
    ],
)
def test_raw_sse_rejects_bad_pieces(raw):
    with pytest.raises(ValueError, match="raw_sse"):
        Reply.from_dict({"raw_sse": raw})


def test_the_demo_tour_s_yaml_is_a_config_that_loads_and_fits_80_columns(hermes_home, monkeypatch):
    """What the tour tells a user to write works as written, and reads at 80x24."""
    import re

    from agent.config import load_config

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefgh12345678")
    tour = Script.load_demo().replies[-1].text
    blocks = re.findall(r"```yaml\n(.*?)```", tour, re.S)
    assert len(blocks) == 2
    for block in blocks:
        assert max(len(line) for line in block.splitlines()) <= 60, block
        (hermes_home / "config.yaml").write_text(block, encoding="utf-8")
        config = load_config()
        assert not config.demo and config.missing_key() is None, block


def test_honour_max_tokens_cuts_a_reply_where_a_real_server_would():
    script = Script.from_dict(
        {
            "honour_max_tokens": True,
            "loop": True,
            "replies": [{"reasoning": "r" * 40, "text": "t" * 40, "tool_calls": [{"name": "x"}]}],
        }
    )
    player = ScriptPlayer(script)
    body = {"model": "m", "messages": [user("hi")], "max_tokens": 15}  # 60 characters
    reply = player.pick(RequestInfo.from_body("openai", body, json.dumps(body).encode()))
    assert (reply.reasoning, reply.text) == ("r" * 40, "t" * 20)
    assert reply.tool_calls == () and reply.finish_reason == "length"
    body["max_tokens"] = 5  # reasoning takes the whole budget: no text at all
    reply = player.pick(RequestInfo.from_body("openai", body, json.dumps(body).encode()))
    assert (reply.reasoning, reply.text, reply.finish_reason) == ("r" * 20, None, "length")
    # Without the flag, or within the limit, a reply is sent as scripted.
    body["max_tokens"] = 1000
    reply = player.pick(RequestInfo.from_body("openai", body, json.dumps(body).encode()))
    assert reply.finish_reason is None and reply.tool_calls
    body["max_tokens"] = 5
    plain = ScriptPlayer(Script.from_dict({"replies": [{"text": "t" * 40}]}))
    reply = plain.pick(RequestInfo.from_body("openai", body, json.dumps(body).encode()))
    assert reply.text == "t" * 40
