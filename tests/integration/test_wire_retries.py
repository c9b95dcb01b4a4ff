"""Retries (W8-W11), credential pools (K1) and actionable, redacted errors (K2, K3), end to end
through the Agent over real HTTP against the scripted server."""

from __future__ import annotations

import logging
import time

import pytest

from agent import events as ev

WIRES = ("openai", "anthropic")
KEY = "sk-test-key-123456"  # the key tests/helpers.write_config puts in the config


def of(harness, kind):
    return [e for e in harness.events if isinstance(e, kind)]


# -- W8: retries, backoff, Retry-After, bounded, never for what retrying cannot fix -----------


@pytest.mark.parametrize("wire", WIRES)
def test_a_429_is_retried_after_retry_after_and_the_user_sees_retrying(harness, wire):
    agent = harness.start(
        {"replies": [{"status": 429, "retry_after": 0.3}, {"text": "recovered"}]}, wire=wire
    )
    started = time.monotonic()
    result = agent.run_turn("hi")
    assert result.status == "ok" and result.text == "recovered"
    assert time.monotonic() - started >= 0.3
    (retry,) = of(harness, ev.Retrying)
    assert (retry.attempt, retry.max_attempts) == (2, 5)
    assert retry.delay >= 0.3 and "429" in retry.reason
    assert len(harness.server.requests_for()) == 2  # SDK retries are off


def test_retries_are_bounded(harness):
    agent = harness.start({"loop": True, "replies": [{"status": 503}]}, agent={"max_retries": 3})
    result = agent.run_turn("hi")
    assert result.status == "error" and "try again shortly" in result.error
    assert len(harness.server.requests_for()) == 3
    assert [e.attempt for e in of(harness, ev.Retrying)] == [2, 3]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_what_retrying_cannot_fix_is_not_retried(harness, status):
    agent = harness.start({"loop": True, "replies": [{"status": status}]})
    result = agent.run_turn("hi")
    assert result.status == "error"
    assert len(harness.server.requests_for()) == 1
    assert not of(harness, ev.Retrying)


# -- W9: idle streams -------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
def test_a_silent_stream_is_aborted_and_retried(harness, wire):
    agent = harness.start(
        {
            "replies": [
                {"text": "stalled partial answer", "chunk_size": 4, "stall": 60, "stall_after": 4},
                {"text": "second try"},
            ]
        },
        wire=wire,
        agent={"stream_idle_timeout_seconds": 0.4},
    )
    started = time.monotonic()
    result = agent.run_turn("hi")
    assert time.monotonic() - started < 15  # the idle timeout cut it, not the 60 s stall
    assert result.status == "ok" and result.text == "second try"
    assert of(harness, ev.StreamReset) and of(harness, ev.Retrying)


def test_stall_retries_share_one_cumulative_deadline(harness):
    agent = harness.start(
        {"loop": True, "replies": [{"text": "x", "stall": 60}]},
        agent={"stream_idle_timeout_seconds": 0.3, "max_retries": 5},
    )
    started = time.monotonic()
    result = agent.run_turn("hi")
    elapsed = time.monotonic() - started
    assert result.status == "error" and "went silent" in result.error
    # Counted, not timed: the first stall sets the call's deadline one idle period on, the
    # retry reads only up to it, and a stall past it is final; five attempts (each with an
    # idle period of its own) would be five requests, however loaded the machine.
    assert len(harness.server.requests_for()) == 2
    assert elapsed < 15  # no attempt waited out the 60 s stall


# -- W10/W11: truncated and malformed streams are retried, the screen resets --------------------


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("knob", [{"omit_finish": True}, {"malformed_after": 5}])
def test_truncated_or_malformed_streams_are_retried_never_accepted(harness, wire, knob):
    agent = harness.start(
        {"replies": [{"text": "broken attempt text", "chunk_size": 4, **knob}, {"text": "good"}]},
        wire=wire,
    )
    result = agent.run_turn("hi")
    assert result.status == "ok" and result.text == "good"
    assert len(of(harness, ev.StreamReset)) == 1
    (retry,) = of(harness, ev.Retrying)
    assert retry.attempt == 2
    rows = harness.rows(result.session_id)
    assert not any("broken" in (r.get("content") or "") for r in rows)


@pytest.mark.parametrize("wire", WIRES)
def test_w11_a_chunk_that_is_not_an_object_is_retried(harness, wire):
    agent = harness.start(
        {"replies": [{"raw_sse": ["data: [1]\n\n"]}, {"text": "good"}]}, wire=wire
    )
    result = agent.run_turn("hi")
    assert result.status == "ok" and result.text == "good"
    (retry,) = of(harness, ev.Retrying)
    assert retry.attempt == 2 and "not an object" in retry.reason


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ({"raw_sse": ["data: {oops\n\n"]}, "malformed"),
        ({"text": "cut", "omit_finish": True}, "truncated"),
    ],
)
def test_w10_w11_the_failure_kind_reaches_the_turn_error(harness, reply, kind):
    agent = harness.start({"loop": True, "replies": [reply]}, agent={"max_retries": 2})
    result = agent.run_turn("hi")
    assert result.status == "error"
    assert len(harness.server.requests_for()) == 2  # retried, then reported
    (error,) = of(harness, ev.TurnError)
    assert error.kind == kind


# -- K1: credential pools -----------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("status", [401, 429])
def test_a_pool_rotates_on_401_and_429(harness, wire, status, monkeypatch):
    monkeypatch.setenv("POOL_KEY_A", "sk-pool-key-aaaaaaaa")
    monkeypatch.setenv("POOL_KEY_B", "sk-pool-key-bbbbbbbb")
    agent = harness.start(
        {"replies": [{"status": status, "retry_after": 60}, {"text": "ok"}]},
        wire=wire,
        provider={"api_key": None, "api_keys_env": ["POOL_KEY_A", "POOL_KEY_B"]},
    )
    started = time.monotonic()
    result = agent.run_turn("hi")
    assert result.status == "ok"
    assert time.monotonic() - started < 15  # no 60 s wait: another key was usable
    first, second = harness.server.requests_for()

    def key_of(r):
        return r.headers.get("x-api-key") or r.headers.get("authorization")

    assert "aaaaaaaa" in key_of(first) and "bbbbbbbb" in key_of(second)
    (retry,) = of(harness, ev.Retrying)
    assert retry.delay == 0.0
    pool = agent.provider().pool
    a, b = pool.entries
    assert (a.id, a.failures, a.last_status) == ("scripted:POOL_KEY_A", 1, status)
    assert b.failures == 0


def test_rotating_a_one_entry_pool_is_a_failure(harness):
    agent = harness.start({"loop": True, "replies": [{"status": 401}]})
    result = agent.run_turn("hi")
    assert result.status == "error" and "rejected the API key" in result.error
    assert "Switched" not in result.error
    assert len(harness.server.requests_for()) == 1


# -- K2/K3: sentences, Gemini legacy keys, redaction ---------------------------------------------


def test_the_gemini_legacy_key_rejection_says_mint_a_new_key(harness):
    body = {
        "error": {
            "code": 401,
            "message": "Request had invalid authentication credentials. Expected OAuth 2 "
            "access token, login cookie or other valid authentication credential.",
            "status": "UNAUTHENTICATED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "ACCESS_TOKEN_TYPE_UNSUPPORTED",
                }
            ],
        }
    }
    agent = harness.start({"replies": [{"status": 401, "error_body": body}]})
    result = agent.run_turn("hi")
    assert "mint a new Gemini API key" in result.error
    (error,) = of(harness, ev.TurnError)
    assert error.kind == "gemini_legacy_key" and "mint a new Gemini API key" in error.message


def test_keys_never_reach_error_text_logs_or_the_database(harness, caplog):
    caplog.set_level(logging.DEBUG, logger="hermes_tui")
    agent = harness.start(
        {"replies": [{"status": 400, "error_message": f"Incorrect API key provided: {KEY}"}]}
    )
    result = agent.run_turn("hi")
    assert result.status == "error" and KEY not in result.error and "[redacted]" in result.error
    logging.getLogger("hermes_tui.wire").warning("leak attempt %s", KEY)
    logging.getLogger("hermes_tui.providers").info("leak attempt %s", KEY)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "leak attempt [redacted]" in text and KEY not in text
    harness.loop.run(harness.db.close())
    harness.db = None
    assert KEY.encode() not in (harness.home / "state.db").read_bytes()


def test_an_internal_error_sentence_is_redacted_too(harness):
    agent = harness.start({"replies": [{"text": "never"}]})

    def leak() -> None:
        raise RuntimeError(f"a bug that quotes the key {KEY}")

    agent.probes.before_model_call = leak
    result = agent.run_turn("hi")
    assert result.status == "error" and "Internal error" in result.error
    assert KEY not in result.error and "[redacted]" in result.error
    assert all(KEY not in e.message for e in of(harness, ev.TurnError))
