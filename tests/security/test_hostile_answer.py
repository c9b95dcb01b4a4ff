"""A hostile answer without end is cut at `agent.max_answer_mb` (4 MB): the call ends as
cut off with one sentence naming the bound, what came before it is kept, stored and shown,
and the rest of the stream is never read into memory (H10)."""

from __future__ import annotations

import sqlite3
import tracemalloc

import pytest
from helpers import run_headless, write_config

from agent import events as ev
from agent.answer_cap import MB, cut_off_sentence
from agent.config import load_config
from agent.loop import Agent
from agent.scripted import Script, ScriptedServer

PIECE = 16 * 1024
_CHUNK = 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'


def endless(field: str, total: int) -> dict:
    """A reply whose `field` (content or reasoning_content) streams `total` characters in
    16 KB deltas, then ends normally (a bounded app never reads that far)."""
    line = _CHUNK + f'"delta":{{"{field}":"' + "x" * PIECE + '"},"finish_reason":null}]}\n\n'
    return {
        "raw_sse": [
            {"repeat": line, "times": total // PIECE},
            _CHUNK + '"delta":{},"finish_reason":"stop"}]}\n\n',
            "data: [DONE]\n\n",
        ]
    }


def script(reply: dict) -> dict:
    return {"replies": [reply, {"text": "a regression asked again"}]}


def stored_answers(home) -> list[str]:
    with sqlite3.connect(home / "state.db") as db:
        rows = db.execute("SELECT content FROM messages WHERE role = 'assistant'").fetchall()
    return [row[0] or "" for row in rows]


@pytest.mark.parametrize("field, what", [("content", "answer"), ("reasoning_content", "reasoning")])
def test_a_10_mb_answer_or_reasoning_is_cut_at_the_bound_and_not_buffered(
    hermes_home, tmp_path, field, what
):
    """H10: the turn ends cut off with the sentence; the answer kept is exactly the bound
    (reasoning: none of it is stored, R1); memory stays far below the 10 MB sent; one call."""
    events: list = []
    replies = {"replies": [{"text": "warm"}, endless(field, 10 * MB), {"text": "asked again"}]}
    with ScriptedServer(Script.from_dict(replies)) as server:
        write_config(hermes_home, server)
        agent = Agent(load_config(), sink=events.append, workspace=tmp_path)
        try:
            agent.run_turn("warm up")  # the SDK's imports are not the answer's memory
            events.clear()
            tracemalloc.start()
            result = agent.run_turn("go")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            agent.close()
        attempts = len(server.requests_for()) - 1
    sentence = cut_off_sentence(what, 4)
    assert result.status == "truncated" and result.error == sentence
    assert "agent.max_answer_mb" in sentence and "4 MB" in sentence
    assert attempts == 1  # a cut-off answer is not asked again
    shown = sum(len(e.text) for e in events if isinstance(e, ev.TextDelta | ev.ReasoningDelta))
    assert shown == 4 * MB
    assert [e.text for e in events if isinstance(e, ev.Notice)][-1] == sentence
    assert len(result.text) == (4 * MB if what == "answer" else 0)
    assert peak < 4 * 4 * MB, peak / MB  # the kept text and its copies, never the 10 MB


def test_headless_a_10_mb_answer_prints_what_was_kept_and_exits_4(hermes_home, tmp_path):
    """H10: headless says the sentence on stderr and exits 4, as for any cut-off answer; the
    stored answer is the 4 MB kept."""
    with ScriptedServer(Script.from_dict(script(endless("content", 10 * MB)))) as server:
        write_config(hermes_home, server)
        proc = run_headless(hermes_home, tmp_path, "go", timeout=120)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert cut_off_sentence("answer", 4) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.count("x") == 4 * MB
    assert [len(text) for text in stored_answers(hermes_home)] == [4 * MB]


def test_the_bound_is_configurable_and_checked(hermes_home, tmp_path):
    """H10: `agent.max_answer_mb` moves the bound; a bad value is one sentence."""
    from agent.config import ConfigError

    with ScriptedServer(Script.from_dict(script(endless("content", 1 * MB)))) as server:
        write_config(hermes_home, server, agent={"max_answer_mb": 0.25})
        agent = Agent(load_config(), workspace=tmp_path)
        try:
            result = agent.run_turn("go")
        finally:
            agent.close()
    assert result.error == cut_off_sentence("answer", 0.25)
    assert len(result.text) == MB // 4
    with ScriptedServer(Script.from_dict(script({"text": "hi"}))) as server:
        write_config(hermes_home, server, agent={"max_answer_mb": 0})
        with pytest.raises(ConfigError, match="max_answer_mb"):
            load_config()


async def test_tui_keeps_and_shows_no_more_than_the_bound(make_app, scripted, hermes_home):
    """H10: the transcript's answer holds the text up to the bound and nothing after it, and
    the sentence is shown."""
    import yaml
    from textual.widgets import Static

    from hermes_tui.widgets.messages import AnswerBlock

    server = scripted(script(endless("content", 1 * MB)))
    app = make_app(server)
    path = hermes_home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data["agent"]["max_answer_mb"] = 0.125
    path.write_text(yaml.safe_dump(data))
    app.config = load_config()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("go")
        await app.wait_for_turn(60)
        await pilot.pause()
        answers = list(app.query(AnswerBlock))
        assert [len(block.source) for block in answers] == [MB // 8]
        shown = " ".join(str(w.content) for w in app.query(Static) if hasattr(w, "content"))
        assert "`agent.max_answer_mb`" in shown or "agent.max_answer_mb" in shown
