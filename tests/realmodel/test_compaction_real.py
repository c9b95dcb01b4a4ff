"""Compaction against a real llama.cpp server: the server's own prompt counts go down (C1).

The history is seeded (a real model would take minutes to write it on two cores); every
model call here, the summary included, is the real server's. SmolLM2-135M summarises badly
and often parrots its input until the output limit: this history is one it summarises
within the budget (the server runs at temperature 0, so it does the same every time).
"""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.kinds import CallPurpose

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(900)]


def history(pairs: int) -> list[dict]:
    """A session's earlier questions and answers, as stored rows."""
    rows = [{"role": "user", "content": "I am adding command-line flags to src/cli.py."}]
    rows.append({"role": "assistant", "content": "Good: tell me which flag comes first."})
    for i in range(pairs):
        rows.append(
            {
                "role": "user",
                "content": f"Question {i}: how do I add a flag --verbose to the CLI in src/cli.py?",
            }
        )
        rows.append(
            {
                "role": "assistant",
                "content": "You add parser.add_argument('--verbose', action='store_true') in "
                f"src/cli.py and pass it to run(). Step {i} done.",
            }
        )
    return rows


def seeded(real, server, rows: list[dict], **config):
    """An agent resumed on a stored session of these rows."""
    agent = real.agent(server, **config)
    session = real.loop.run(
        real.db.create_session(model="smollm", provider="llama", workspace=str(real.workspace))
    )
    for row in rows:
        real.loop.run(real.db.add_message(session["id"], row))
    agent.resume(session["id"])
    return agent


def turn_prompts(real) -> list[int]:
    """The server's prompt counts of every turn call so far, in order."""
    return [
        e.input_tokens
        for e in real.events
        if isinstance(e, ev.UsageUpdated) and e.purpose == CallPurpose.TURN and not e.estimated
    ]


def test_after_compact_the_next_request_is_smaller_by_the_servers_count(real, llama):
    agent = seeded(
        real,
        llama(),
        history(8),
        provider={"max_tokens": 32, "context_window": 8192},
        compression={"keep_recent": 2},
    )
    assert agent.run_turn("Which flag comes next?").status in ("ok", "truncated")
    before = turn_prompts(real)[-1]
    result = agent.compact()
    assert result.ok, result.message
    summary = [e for e in real.events if isinstance(e, ev.UsageUpdated)][-1]
    assert summary.purpose == CallPurpose.SUMMARY and not summary.estimated
    assert agent.run_turn("Thanks. Go on.").status in ("ok", "truncated")
    after = turn_prompts(real)[-1]
    print(f"realmodel /compact: next request's prompt tokens (server usage) {before} -> {after}")
    assert after < before, (before, after)
    # Every call is in the session's totals: the turn, the summary, one more turn.
    row = real.session(agent.session_id)
    assert row["api_call_count"] == 3 and row["estimated_calls"] == 0


def test_automatic_compaction_at_a_small_window_lets_the_call_succeed(real, llama):
    window = 2048
    agent = seeded(
        real,
        llama(context=window),
        history(12),
        provider={"max_tokens": 32, "context_window": window},
        compression={"keep_recent": 2},
    )
    assert agent.compressor.measure(agent)[0] > 0.75 * window  # over the threshold already
    result = agent.run_turn("Which flag comes next?")
    assert result.status in ("ok", "truncated"), result.error
    finished = [e for e in real.events if isinstance(e, ev.CompactionFinished)]
    assert finished and finished[-1].ok, [e.message for e in finished]
    (prompt,) = turn_prompts(real)
    print(f"realmodel automatic compaction at a {window} window: the call took {prompt} tokens")
    assert prompt < window * 0.75  # the call went through, well inside the window


def notes(pairs: int) -> list[dict]:
    """A history this model does not summarise: it parrots it until its output limit."""
    rows = []
    for i in range(pairs):
        rows.append(
            {
                "role": "user",
                "content": f"Note {i}: module {i} lives in src/module_{i}.py. It reads its "
                f"settings from config/module_{i}.yaml, logs to logs/module_{i}.log and has "
                f"tests in tests/test_module_{i}.py. Describe it in one sentence.",
            }
        )
        rows.append(
            {"role": "assistant", "content": f"It handles module {i} and is configured there."}
        )
    return rows


def test_a_summary_the_model_rambles_in_is_not_committed(real, llama):
    agent = seeded(
        real,
        llama(),
        notes(6),
        provider={"max_tokens": 32, "context_window": 8192},
        compression={"keep_recent": 2},
    )
    assert agent.run_turn("Which module comes next?").status in ("ok", "truncated")
    before = turn_prompts(real)[-1]
    result = agent.compact()
    # Cut off at its budget, asked again shorter, cut off again: rejected, nothing changed.
    assert not result.ok and result.reason == "cutoff", result.message
    summaries = [e for e in real.events if getattr(e, "purpose", None) == CallPurpose.SUMMARY]
    assert len(summaries) == 2 and all(not e.estimated for e in summaries)
    assert agent.run_turn("Thanks. Go on.").status in ("ok", "truncated")
    after = turn_prompts(real)[-1]
    assert before < after < before + 100  # the same history, one exchange longer
