"""Liveness on a live agent: heartbeats, turn states, the skew guard, the AttributeError breaker."""

from __future__ import annotations

import time

from agent import events as ev
from hermes_tui.status import TurnState


def test_heartbeat_is_stamped_and_throttled(harness):
    agent = harness.start({"replies": [{"text": "word " * 400, "chunk_size": 2}]})
    stamps = []
    original = harness.db.enqueue_session_update

    def spy(session_id, **fields):
        if "last_activity_at" in fields:
            stamps.append(fields["last_activity_at"])
        return original(session_id, **fields)

    harness.db.enqueue_session_update = spy
    result = agent.run_turn("go")
    assert result.status == "ok"
    # 1,000 chunks in well under the 5 s interval: exactly one stamp.
    assert len(stamps) == 1
    session = harness.loop.run(harness.db.get_session(result.session_id))
    assert abs(session["last_activity_at"] - time.time()) < 60


def test_turn_states_in_order(harness):
    agent = harness.start(
        {
            "replies": [
                {
                    "reasoning": "hmm",
                    "text": "checking",
                    "tool_calls": [{"id": "c", "name": "list_dir", "arguments": {}}],
                },
                {"text": "done"},
            ]
        }
    )
    state = TurnState()
    phases = []

    def sink(event):
        state.apply(event, time.monotonic())
        if not phases or phases[-1] != state.phase:
            phases.append(state.phase)

    agent.sink = sink
    agent.run_turn("go")
    assert phases == ["waiting", "thinking", "writing", "tool", "waiting", "writing", "idle"]


def test_new_turns_are_refused_after_the_code_changed(harness):
    agent = harness.start({"replies": [{"text": "never sent"}]})
    agent.skew_guard.fingerprint = "an older install"
    result = agent.run_turn("please")
    assert result.status == "error"
    # Same version string on disk: the message says the code changed rather than "upgraded".
    assert "changed on disk while running: restart to continue" in result.error
    assert result.unsent == "please"
    assert harness.server.requests == []
    assert harness.loop.run(harness.db.list_sessions()) == []


def test_attribute_error_in_own_code_ends_the_turn_at_once(harness):
    agent = harness.start({"replies": [{"text": "x"}] * 5}, agent={"max_retries": 5})
    provider = agent.provider()
    provider.config = None  # the next call raises AttributeError inside agent/providers/
    result = agent.run_turn("go")
    assert result.status == "error"
    assert "restart to continue" in result.error
    assert harness.server.requests == []
    assert not any(isinstance(e, ev.Retrying) for e in harness.events)
