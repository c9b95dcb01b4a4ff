"""Prompt caching on every wire ($1), over real HTTP through the real SDKs.

The Anthropic wire (and Anthropic models on OpenRouter's chat wire) carries `cache_control`
breakpoints where they pay, at most four and never on a thinking block; every wire keeps
the prefix byte-identical between calls (T7), so a cache holds across a tool round and a
steer. The scripted server's `anthropic` persona bills the cache as Anthropic documents it,
so the reads and writes a session gets are visible, across a compaction and a rewind too.
"""

from __future__ import annotations

import itertools
import json

import pytest

from agent import events as ev
from agent.providers.cache_points import MAX_BREAKPOINTS, breakpoints
from agent.scripted.prompt_cache import IMPLICIT_STEP_TOKENS, prefix_blocks

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}

LIST = {"tool_calls": [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}]}
SHELL = {"tool_calls": [{"id": "c2", "name": "run_shell", "arguments": {"command": "true"}}]}
OPENROUTER = {"model": "anthropic/claude-sonnet-4.5", "provider": {"cache_breakpoints": True}}


def bodies(harness) -> list[dict]:
    return [r.body for r in harness.server.requests]


def usage_events(harness) -> list[ev.UsageUpdated]:
    return [e for e in harness.events if isinstance(e, ev.UsageUpdated)]


def test_the_anthropic_wire_marks_tools_system_and_the_two_latest_user_turns(harness):
    """$1: the last tool, the system prompt, the latest user turn and the one before."""
    agent = harness.start({"replies": [LIST, {"text": "done"}]}, wire="anthropic")
    assert agent.run_turn("go").status == "ok"
    first, second = bodies(harness)
    last_tool = len(first["tools"]) - 1
    assert breakpoints(first) == [f"tools[{last_tool}]", "system[0]", "messages[0].content[0]"]
    # The tool round: the tool results' turn writes, the typed message's mark reads.
    assert breakpoints(second) == [
        f"tools[{last_tool}]",
        "system[0]",
        "messages[0].content[0]",
        "messages[2].content[0]",
    ]
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    assert second["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_thinking_blocks_never_carry_a_breakpoint_and_there_are_never_more_than_four(harness):
    """$1: a signed thinking block goes back within the turn (A7), never marked."""
    script = {
        "replies": [
            {**LIST, "reasoning": "look first"},
            {**SHELL, "reasoning": "then run"},
            {"text": "done"},
        ]
    }
    agent = harness.start(script, wire="anthropic", provider={"thinking_budget": 1024})
    assert agent.run_turn("go").status == "ok"
    last = bodies(harness)[-1]
    thinking = [
        block
        for message in last["messages"]
        for block in message["content"]
        if block["type"] == "thinking"
    ]
    assert len(thinking) == 2 and not any("cache_control" in block for block in thinking)
    assert all(len(breakpoints(body)) <= MAX_BREAKPOINTS for body in bodies(harness))
    assert len(breakpoints(last)) == MAX_BREAKPOINTS


def test_an_anthropic_model_on_openrouter_gets_breakpoints_on_content_parts(harness):
    """$1: OpenRouter's chat wire: system and the two latest user/tool messages, as parts."""
    agent = harness.start({"replies": [LIST, {"text": "done"}]}, **OPENROUTER)
    assert agent.run_turn("go").status == "ok"
    first, second = bodies(harness)
    assert breakpoints(first) == ["messages[0].content[0]", "messages[1].content[0]"]
    assert breakpoints(second) == [
        "messages[0].content[0]",
        "messages[1].content[0]",
        "messages[3].content[0]",
    ]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert "cache_control" not in json.dumps(second["tools"])


def test_a_plain_openai_model_gets_no_breakpoints(harness):
    """$1: OpenAI caches a stable prefix by itself; its requests carry no marks."""
    agent = harness.start({"replies": [LIST, {"text": "done"}]})
    agent.run_turn("go")
    assert not any(breakpoints(body) for body in bodies(harness))
    assert "cache_control" not in harness.server.requests[-1].raw.decode()


@pytest.mark.parametrize(
    ("wire", "extra"), [("anthropic", {}), ("openai", {}), ("openai", OPENROUTER)]
)
def test_the_prefix_is_byte_identical_across_a_tool_round_and_a_steer(harness, wire, extra):
    """$1, T7: each request starts with every byte of the one before (marks aside)."""
    script = {"replies": [LIST, SHELL, {"text": "done"}, {"text": "again"}]}
    config = {"agent": {"approval": "ask"}, **extra}
    agent = harness.start(script, wire=wire, **config)
    agent.approve = lambda _request: agent.steer("also check the tests") or True
    assert agent.run_turn("go").status == "ok"
    assert agent.run_turn("and now?").status == "ok"
    sent = bodies(harness)
    assert len(sent) == 4
    for before, after in itertools.pairwise(sent):
        earlier, later = prefix_blocks(before), prefix_blocks(after)
        assert [text for text, _ in later[: len(earlier)]] == [text for text, _ in earlier]
    assert "also check the tests" in json.dumps(sent[2])


ANTHROPIC = {"persona": "anthropic", "extra": {"cache_min_tokens": 64}}


def _cached(harness) -> list[tuple[int, int, int]]:
    """(input, read, written) of each turn call."""
    return [
        (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens)
        for u in usage_events(harness)
        if u.purpose == "turn"
    ]


def test_the_anthropic_persona_reads_what_the_call_before_wrote(harness):
    """$1: a tool round and the next turn read the cached prefix and write only what is new."""
    script = {"replies": [LIST, {"text": "done"}, {"text": "again"}], "server": ANTHROPIC}
    agent = harness.start(script, wire="anthropic")
    agent.run_turn("go")
    agent.run_turn("and now?")
    (in1, read1, wrote1), (in2, read2, wrote2), (in3, read3, wrote3) = _cached(harness)
    # The newest mark is on the last block: all of each prompt is read or written.
    assert in1 == in2 == in3 == 0
    assert read1 == 0 and wrote1 > 0
    # The second call reads all the first wrote (its newer mark is the second's older one).
    assert read2 == wrote1 and wrote2 > 0
    assert read3 == read2 + wrote2 and wrote3 > 0
    # The session's totals say what it read and wrote; the rest is input after the marks.
    last = usage_events(harness)[-1]
    assert last.total_cache_read_tokens == read2 + read3
    assert last.total_cache_write_tokens == wrote1 + wrote2 + wrote3


def test_a_compaction_and_a_rewind_write_a_new_cache_from_where_the_prefix_changed(harness):
    """$1: after a compaction only the tools, the system prompt and the task (the first
    message, which compaction keeps) are read; after a rewind the prefix up to the rewind
    point is read and the rest written anew."""
    summary = {"match": SUMMARY_RULE, "text": "SUMMARY of the work so far."}
    turns = [{"text": f"answer {n} " + "words " * 40} for n in range(6)]
    script = {"replies": [summary, *turns], "server": ANTHROPIC}
    compression = {"protect_first": 1, "keep_recent": 2}
    agent = harness.start(
        script, wire="anthropic", compression=compression, provider={"context_window": 10**7}
    )
    for n in range(3):
        agent.run_turn(f"question {n} " + "detail " * 40)
    before = _cached(harness)
    assert before[-1][1] > 0  # a warm cache
    task = before[0][2]  # the first call wrote its tools, system prompt and the task

    assert agent.compact().ok
    agent.run_turn("after the compaction")
    _, read, wrote = _cached(harness)[-1]
    assert read == task < before[-1][1] and wrote > 0

    agent.run_turn("one more")
    sid = agent.session_id
    rows = harness.rows(sid)
    point = next(r for r in reversed(rows) if r["role"] == "user" and r["content"] == "one more")
    harness.loop.run(harness.db.branch_session(sid, point["seq"], kind="rewind", move_later=True))
    session = harness.loop.run(harness.db.get_session(sid))
    agent.attach_session(sid, harness.rows(sid), session)
    warm = _cached(harness)[-2]  # the call "after the compaction" wrote up to its message
    agent.run_turn("instead, this")
    _, read, wrote = _cached(harness)[-1]
    assert read == warm[1] + warm[2]  # everything before the rewind point
    assert wrote > 0


def test_openai_style_implicit_caching_reads_the_stable_prefix(harness):
    """$1: no marks; the `openai` persona caches a prompt's prefix by itself, and the app's
    byte-stable prefix is read back on the next call and reported as cache reads."""
    script = {
        "replies": [LIST, {"text": "done"}, {"text": "again"}],
        "server": {"persona": "openai", "extra": {"cache_min_tokens": 256}},
    }
    agent = harness.start(script)
    agent.run_turn("go")
    agent.run_turn("and now?")
    calls = _cached(harness)
    assert calls[0][1] == 0 and calls[1][1] > 0 and calls[2][1] >= calls[1][1]
    # The whole first prompt is read back (to the persona's 128-token steps), not only
    # the tools before the system prompt: nothing early in it changes between calls.
    assert calls[1][1] > calls[0][0] - IMPLICIT_STEP_TOKENS
    assert all(read < prompt for prompt, read, _ in calls)  # inside prompt_tokens
    assert usage_events(harness)[-1].total_cache_read_tokens == calls[1][1] + calls[2][1]
