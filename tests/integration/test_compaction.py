"""Context compaction over real HTTP against the scripted server, on real SQLite (C1-C7, D3)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import threading
import time

import pytest

import agent.compaction as compaction
from agent import events as ev
from agent.compaction import SUMMARY_KEY, override_text
from agent.log_context import install_log_context
from agent.messages import model_visible, to_openai

SUMMARY_RULE = {"system_contains": "You summarise a conversation"}
SUMMARY = "SUMMARY-OF-THE-MIDDLE: the user asked questions 0-3 and got answers."
FILL = "lorem ipsum " * 30


def turns(n: int) -> list[dict]:
    return [{"text": f"answer {i} {FILL}"} for i in range(n)]


def summary_reply(**knobs) -> dict:
    return {"match": SUMMARY_RULE, "text": SUMMARY, **knobs}


def start(harness, replies, *, compression=None, provider=None, wire="openai"):
    comp = {"protect_first": 1, "keep_recent": 4, **(compression or {})}
    prov = {"context_window": 10_000_000, **(provider or {})}
    return harness.start({"replies": replies}, wire=wire, compression=comp, provider=prov)


def seed(agent, n: int) -> str:
    for i in range(n):
        result = agent.run_turn(f"question {i} {FILL}")
        assert result.status == "ok", result.error
    return agent.session_id


def set_window(agent, window: int) -> None:
    name = agent.provider_name
    agent.config.providers[name] = dataclasses.replace(
        agent.config.providers[name], context_window=window
    )


def arm_auto(agent) -> None:
    """Make the next model call (with one more user message) pass the threshold."""
    tokens, _ = agent.compressor.measure(agent)
    set_window(agent, int(tokens / agent.config.compression.threshold))


def summary_bodies(harness) -> list[dict]:
    return [b for b in harness.bodies() if "You summarise a conversation" in json.dumps(b)]


def normal_bodies(harness) -> list[dict]:
    return [b for b in harness.bodies() if "You summarise a conversation" not in json.dumps(b)]


def of(harness, kind):
    return [e for e in harness.events if isinstance(e, kind)]


def role_classes(messages) -> list[str]:
    return ["user" if m.role in ("user", "tool") else "assistant" for m in model_visible(messages)]


def alternates(classes: list[str]) -> bool:
    return all(a != b for a, b in itertools.pairwise(classes))


def view(messages) -> list[tuple]:
    return [(m.role, m.content, m.display_kind) for m in messages]


# -- C1 / D3: /compact summarises the middle, history stays --------------------------------
def test_manual_compact_keeps_history_and_resume_replays_the_same_view(harness):
    agent = start(harness, [summary_reply(), *turns(5)])
    sid = seed(agent, 4)
    before = list(agent.messages)
    result = agent.compact()
    assert result.ok, result.message
    assert result.summarised == 3  # a0, u1, a1: u0 is protected, the last 4 are kept
    assert agent.session_id == sid  # C6: the session id does not rotate
    # The model now sees: the task, the summary, the recent turns; roles alternate (C5).
    roles = [m.role for m in model_visible(agent.messages)]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    summary_row = model_visible(agent.messages)[1]
    assert SUMMARY in summary_row.content and summary_row.display_metadata[SUMMARY_KEY]
    assert alternates(role_classes(agent.messages))
    # The summary request: the middle only, no tools, answered off the caller's thread.
    (body,) = summary_bodies(harness)
    text = json.dumps(body)
    assert "answer 0" in text and "question 1" in text and "question 3" not in text
    assert "tools" not in body
    # History stays: every old row is in the database, marked, still searchable.
    rows = harness.rows(sid)
    assert [r["content"] for r in rows if r["compacted"]] == [m.content for m in before[1:4]]
    marker = [r for r in rows if r["display_kind"] == "compaction"]
    assert marker and marker[0]["display_metadata"] == {"summarised": 3}
    hits = harness.loop.run(harness.db.search("question 1"))
    assert any(h["session_id"] == sid for h in hits)
    # D3: the non-compacted rows are exactly what the model sees, and a resume replays it.
    live = harness.loop.run(harness.db.load_messages(sid, include_compacted=False))
    assert [(r["role"], r["content"], r["display_kind"]) for r in live] == view(agent.messages)
    other = harness.agent()
    other.resume(sid)
    system = agent.request().system
    assert to_openai(other.messages, system) == to_openai(agent.messages, system)
    # The next turn sends the summary and not the summarised messages.
    assert agent.run_turn("go on").status == "ok"
    last = json.dumps(normal_bodies(harness)[-1])
    assert SUMMARY in last and "answer 0" not in last and "question 0" in last
    kinds = [type(e) for e in harness.events]
    assert ev.CompactionStarted in kinds and ev.CompactionProgress in kinds
    finished = of(harness, ev.CompactionFinished)[-1]
    assert finished.ok and finished.summarised == 3
    assert ev.DisplayRow("compaction", {"summarised": 3}) in harness.events


# -- C5: the merged row, its marker and the guard -------------------------------------------
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_summary_merges_into_the_first_kept_message_and_the_row_is_guarded(harness, wire):
    agent = start(harness, [summary_reply(), *turns(5)], compression={"keep_recent": 3}, wire=wire)
    sid = seed(agent, 4)
    result = agent.compact()
    assert result.ok, result.message
    visible = model_visible(agent.messages)
    # u0 (user) then a2 (assistant): no standalone role fits, so the summary merges into a2.
    assert [m.role for m in visible] == ["user", "assistant", "user", "assistant"]
    merged = visible[1]
    assert merged.content.startswith("[Summary") and "answer 2" in merged.content
    assert merged.display_metadata[SUMMARY_KEY] == "merged"
    assert alternates(role_classes(agent.messages))
    # In memory: a clean-text override may not drop the summary; ordinary rows still change.
    assert override_text(merged, "answer 2 (clean)") is False
    assert SUMMARY in merged.content
    assert override_text(visible[2], "question 3 (clean)") is True
    # In the database: the merged row carries the summary and its marker.
    row = next(r for r in harness.rows(sid) if r["id"] == merged.db_id)
    assert SUMMARY in row["content"] and row["display_metadata"][SUMMARY_KEY] == "merged"
    # The live view and a resume replay the same bytes.
    other = harness.agent()
    other.resume(sid)
    assert SUMMARY in model_visible(other.messages)[1].content


# -- C2: progress-aware budget and the commit fence -----------------------------------------
def test_stalled_summary_is_cancelled_and_the_turn_continues_with_every_message(harness):
    agent = start(
        harness,
        [summary_reply(stall=60, stall_after=1, chunk_size=5), *turns(6)],
        compression={"idle_timeout_seconds": 0.3, "total_ceiling_seconds": 60},
    )
    sid = seed(agent, 4)
    arm_auto(agent)
    started = time.monotonic()
    result = agent.run_turn("question 4")
    assert result.status == "ok", result.error
    assert time.monotonic() - started < 15  # the idle cut, not the minute's stall or ceiling
    finished = of(harness, ev.CompactionFinished)[-1]
    assert not finished.ok and "no progress" in finished.message
    # Nothing dropped: the turn's model call carried every earlier message.
    last = json.dumps(normal_bodies(harness)[-1])
    assert all(f"question {i}" in last and f"answer {i}" in last for i in range(4))
    assert not any(r["compacted"] for r in harness.rows(sid))
    assert agent.compressor.failures == 1
    agent.compressor.helper.join(5)  # the helper closed its own stream and ended
    assert not agent.compressor.helper.is_alive()


class ChunkClock:
    """A clock that moves only when a summary chunk lands, `step` seconds per chunk.

    C2's idle timer and ceiling then read the summary's pace, not the machine's: a loaded
    machine can hold a thread for longer than any idle timeout, but it cannot change how
    many chunks arrived. The tick happens under the progress lock, with the count.
    """

    def __init__(self, monkeypatch, step: float) -> None:
        self.now, self.step, self.chunks = 0.0, step, 0
        advance = compaction._Progress.advance

        def ticking(progress, chars: int) -> None:
            with progress.cond:
                self.now += self.step
                self.chunks += 1
                advance(progress, chars)

        monkeypatch.setattr(compaction._Progress, "advance", ticking)

    def __call__(self) -> float:
        return self.now


def test_slow_but_progressing_summary_is_allowed_up_to_the_ceiling(harness, monkeypatch):
    """C2: every chunk resets the idle timer, so a slow summary that keeps coming runs on."""
    agent = start(
        harness,
        [summary_reply(delay=0.02, chunk_size=4), *turns(5)],
        compression={"idle_timeout_seconds": 0.4, "total_ceiling_seconds": 20},
    )
    seed(agent, 4)
    clock = agent.compressor.progress_clock = ChunkClock(monkeypatch, step=0.3)  # each gap < idle
    result = agent.compact()
    assert result.ok, result.message
    assert clock.chunks > 5
    assert clock() > 0.4 * 2  # well past one idle period: progress kept it alive
    progress = [e.summary_tokens for e in of(harness, ev.CompactionProgress)]
    assert progress == sorted(progress)


def test_progressing_summary_is_still_cut_at_the_total_ceiling(harness, monkeypatch):
    """C2: progress resets the idle timer but not the total ceiling."""
    agent = start(
        harness,
        # Held after 6 chunks (1.8 s on the chunk clock): the cut must be the ceiling's.
        [summary_reply(chunk_size=4, gate="held", gate_after=6), *turns(5)],
        compression={"idle_timeout_seconds": 0.4, "total_ceiling_seconds": 1.0},
    )
    sid = seed(agent, 4)
    before = view(agent.messages)
    clock = agent.compressor.progress_clock = ChunkClock(monkeypatch, step=0.3)
    # Bound the wait: without the ceiling the held summary would wait forever; released, it
    # commits and the assertions below say so.
    released = threading.Event()

    def release() -> None:
        released.set()
        harness.server.open_gate("held")

    timer = threading.Timer(10, release)
    timer.start()
    try:
        result = agent.compact()
    finally:
        timer.cancel()
    assert not released.is_set(), "the cut waited for the gate, not the ceiling"
    assert not result.ok and result.reason == "ceiling", result.message
    assert clock() >= 1.0
    harness.server.open_gate("held")
    agent.compressor.helper.join(5)
    assert not agent.compressor.helper.is_alive()
    assert view(agent.messages) == before
    assert not any(r["compacted"] for r in harness.rows(sid))


class _DeafAbort(compaction.Abort):
    """An abort that cannot stop the stream: the summary still arrives after the cancel."""

    def fire(self) -> None:
        pass


def test_summary_arriving_after_the_cancel_is_not_committed(harness, monkeypatch):
    monkeypatch.setattr(compaction, "Abort", _DeafAbort)
    agent = start(
        harness,
        [summary_reply(gate="late", gate_after=1, chunk_size=5), *turns(5)],
        compression={"idle_timeout_seconds": 0.2},
    )
    sid = seed(agent, 4)
    before = view(agent.messages)
    result = agent.compact()
    assert not result.ok and result.reason == "idle_timeout"
    harness.server.open_gate("late")  # the rest of the summary now arrives
    agent.compressor.helper.join(5)
    assert not agent.compressor.helper.is_alive()
    assert view(agent.messages) == before
    rows = harness.rows(sid)
    assert not any(r["compacted"] or r["display_kind"] for r in rows)


def test_stop_cancels_a_running_compaction(harness):
    agent = start(
        harness,
        [summary_reply(gate="hold", gate_after=3, chunk_size=5), *turns(6)],
        compression={"idle_timeout_seconds": 60},
    )
    seed(agent, 4)
    arm_auto(agent)
    events = harness.events
    harness.events.clear()

    def stop_on_progress(event):
        events.append(event)
        if isinstance(event, ev.CompactionProgress):
            agent.stop()

    agent.sink = stop_on_progress
    started = time.monotonic()
    result = agent.run_turn("question 4")
    assert result.status == "stopped"
    assert time.monotonic() - started < 15  # the stop, not the 60 s idle timeout
    finished = of(harness, ev.CompactionFinished)[-1]
    assert not finished.ok and finished.message == "Compaction cancelled."
    assert agent.compressor.failures == 0  # a user's stop is not a failure
    harness.server.open_gate("hold")


# -- C3 / C4: ladder, warning, max_attempts on every path ----------------------------------
FAILING = {
    "error": {"status": 500, "error_message": "summariser down"},
    "stall": {"stall": 20, "stall_after": 0},
    "empty": {"text": ""},
}


@pytest.mark.parametrize("kind", sorted(FAILING))
def test_max_attempts_is_honoured_on_every_failure_path(harness, kind):
    tool = {"tool_calls": [{"id": "c{n}", "name": "list_dir", "arguments": {"path": "."}}]}
    replies = [{"match": SUMMARY_RULE, **FAILING[kind]}, *turns(4), tool, tool, tool, tool]
    replies += turns(1)
    agent = start(
        harness,
        replies,
        compression={"max_attempts": 2, "idle_timeout_seconds": 0.2},
    )
    seed(agent, 4)
    now = [1000.0]

    def clock():  # every look at the clock is 1000 s later: the cooldown never blocks
        now[0] += 1000.0
        return now[0]

    agent.compressor.clock = clock
    arm_auto(agent)
    result = agent.run_turn("question 4: list the files four times")
    assert result.status == "ok", result.error
    assert len(summary_bodies(harness)) == 2  # five model calls, two attempts
    assert agent.compressor.failures == 2
    warnings = [e for e in harness.events if isinstance(e, ev.Notice) and "paused" in e.text]
    assert len(warnings) == 1 and "2 time(s) this turn" in warnings[0].text


def test_failure_starts_the_cooldown_ladder_and_blocks_with_one_warning(harness):
    agent = start(
        harness, [{"match": SUMMARY_RULE, "status": 500, "error_message": "down"}, *turns(8)]
    )
    seed(agent, 4)
    now = [0.0]
    agent.compressor.clock = lambda: now[0]
    arm_auto(agent)
    assert agent.run_turn("question 4").status == "ok"
    assert agent.compressor.blocked_until == 60.0
    for i in range(3):  # blocked: no summary request, one warning only
        assert agent.run_turn(f"more {i}").status == "ok"
    assert len(summary_bodies(harness)) == 1
    warnings = [e for e in harness.events if isinstance(e, ev.Notice) and "paused" in e.text]
    assert len(warnings) == 1 and "cooling down" in warnings[0].text


# -- C6 / C7: session id in logs, sticky routing key ------------------------------------------
def test_logs_after_and_during_compaction_carry_the_session_id(harness, caplog):
    install_log_context()  # what the app's log setup does (hermes_tui/logfile.py)
    caplog.set_level(logging.INFO, logger="hermes_tui")
    agent = start(harness, [summary_reply(), *turns(6)])
    sid = seed(agent, 4)
    arm_auto(agent)
    after = logging.getLogger("hermes_tui.test")
    agent.probes.before_seal = lambda: after.info("turn ending")
    caplog.clear()
    assert agent.run_turn("question 4").status == "ok"
    assert agent.session_id == sid and of(harness, ev.CompactionFinished)[-1].ok
    records = [r for r in caplog.records if r.name.startswith("hermes_tui")]
    helper = [r for r in records if r.threadName == "hermes-compaction"]
    assert helper, "the summary thread logged nothing"
    assert {r.session_id for r in records} == {sid}
    assert records[-1].getMessage() == "turn ending"


def test_sticky_routing_key_on_every_call_including_summaries(harness):
    agent = start(harness, [summary_reply(), *turns(6)], provider={"sticky_routing": True})
    sid = seed(agent, 4)
    assert agent.compact().ok
    assert agent.run_turn("after").status == "ok"
    bodies = harness.bodies()
    assert len(summary_bodies(harness)) == 1
    assert [b.get("session_id") for b in bodies] == [sid] * len(bodies)


def test_no_routing_key_without_the_flag(harness):
    agent = start(harness, [summary_reply(), *turns(5)])
    seed(agent, 4)
    assert agent.compact().ok
    assert all("session_id" not in b for b in harness.bodies())


def test_the_demo_model_answers_a_summary_request_with_a_summary(harness):
    from importlib import resources

    import yaml

    demo = resources.files("agent.scripted").joinpath("demo.yaml").read_text("utf-8")
    script = yaml.safe_load(demo)
    script["defaults"] = {"chunk_size": 64}  # no typing delay: the tour's pacing is for people
    agent = harness.start(script)
    for n in range(5):
        assert agent.run_turn(f"tour {n}").status == "ok"
    result = agent.compact()
    assert result.ok, result.message
    summary = next(m.content for m in agent.messages if (m.display_metadata or {}).get(SUMMARY_KEY))
    assert "No files were changed" in summary and "Let me show you" not in summary
