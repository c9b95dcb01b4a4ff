"""The servers' own error bodies, classified: context overflow, a wrong URL, a missing model.

The bodies are exact: llama.cpp's as a real llama-server sends them, the others as the servers
and APIs send them (agent/scripted/personas.py plays the same bodies over HTTP).
"""

from __future__ import annotations

import pytest

from agent.kinds import ErrorKind
from agent.providers.errors import (
    classify_status,
    connection_error,
    error_body,
    is_context_overflow,
    overflow_limit,
)
from agent.scripted.personas import PERSONAS, Persona

LLAMA_OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (2067 tokens) exceeds the available context size (2048 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 2067,
        "n_ctx": 2048,
    }
}
LLAMA_FILE_NOT_FOUND = {
    "error": {"message": "File Not Found", "type": "not_found_error", "code": 404}
}


def classify(status, body, **kw):
    kw.setdefault("provider", "local")
    kw.setdefault("model", "m")
    return classify_status(status, body, **kw)


def inner(body):
    """What the openai SDK hands over as the error body: the `error` object when there is one."""
    return body.get("error", body) if isinstance(body, dict) else body


@pytest.mark.parametrize("persona", [p for p in PERSONAS])
def test_every_servers_overflow_is_a_context_error_with_the_compact_advice(persona):
    status, body = Persona(persona, ("m",), 2048).error("context_overflow", "m", 2067)
    for given in (body, inner(body)):  # the anthropic SDK passes the whole body, openai's the inner
        error = classify(status, given)
        assert error.kind == ErrorKind.CONTEXT_LENGTH, (persona, error.message)
        assert "/compact" in error.message and "/new" in error.message
        assert not error.retryable


def test_llama_cpp_overflow_is_known_by_its_type_and_names_its_window():
    found = error_body(inner(LLAMA_OVERFLOW))
    assert found.type == "exceed_context_size_error"
    assert is_context_overflow(found)
    error = classify(400, inner(LLAMA_OVERFLOW))
    assert error.context_limit == 2048
    assert "2,048 tokens" in error.message


def test_type_first_a_message_without_any_phrase_still_overflows():
    body = {"error": {"message": "no.", "type": "exceed_context_size_error", "code": 400}}
    assert classify(400, inner(body)).kind == ErrorKind.CONTEXT_LENGTH
    body = {
        "error": {
            "message": "no.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    assert classify(400, inner(body)).kind == ErrorKind.CONTEXT_LENGTH


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (
            "This model's maximum context length is 8192 tokens. However, you requested 9000 "
            "tokens (8000 in the messages, 1000 in the completion).",
            8192,
        ),
        ("prompt is too long: 208000 tokens > 200000 maximum", 200000),
        (
            "The number of tokens to keep from the initial prompt is greater than the context "
            "length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context "
            "length, or provide a shorter input.",
            4096,
        ),
        ("Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)", 7424),
        (
            "Trying to keep the first 10136 tokens when context the overflows. However, the model "
            "is loaded with context length of only 7866 tokens, which is not enough.",
            7866,
        ),
        ("input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000", None),
        ("the input length exceeds the context length", None),
    ],
)
def test_phrase_second_and_the_window_when_the_message_names_it(message, limit):
    found = error_body({"error": message})
    assert is_context_overflow(found)
    assert overflow_limit(found) == limit


def test_an_overflow_sent_with_a_server_error_status_is_still_an_overflow():
    # LM Studio's MLX path, or an error inside a 200 stream, carry no 400.
    error = classify(500, {"error": {"message": "Context size has been exceeded."}})
    assert error.kind == ErrorKind.CONTEXT_LENGTH


def test_a_404_that_is_not_about_the_model_says_the_url_looks_wrong():
    error = classify(
        404, inner(LLAMA_FILE_NOT_FOUND), url="http://127.0.0.1:8080/v1/v1", kind="openai"
    )
    assert error.kind == ErrorKind.NOT_FOUND
    assert "does not know model" not in error.message
    assert "base_url looks wrong" in error.message
    assert "File Not Found" in error.message  # the server's own words
    assert "http://127.0.0.1:8080/v1/v1" in error.message
    for body in ({"detail": "Not Found"}, "404 page not found"):  # vLLM (FastAPI), Ollama
        assert "base_url looks wrong" in classify(404, body).message


@pytest.mark.parametrize("persona", ["vllm", "ollama", "openai", "anthropic"])
def test_a_404_about_the_model_still_says_so(persona):
    status, body = Persona(persona, ("m",)).error("model_not_found", "llama9", 10)
    error = classify(status, inner(body), model="llama9")
    assert error.kind == ErrorKind.NOT_FOUND
    assert "does not know model 'llama9'" in error.message


def test_refused_on_loopback_is_not_retried_and_says_to_fix_the_port():
    refused = ConnectionRefusedError(111, "Connection refused")
    wrapped = OSError("connect failed")
    wrapped.__cause__ = refused
    local = connection_error("local", "http://127.0.0.1:9/v1", wrapped, local=True)
    assert local.max_attempts == 1
    assert "Nothing is listening at http://127.0.0.1:9/v1" in local.message
    remote = connection_error("far", "https://example.invalid/v1", wrapped, local=False)
    assert remote.max_attempts is None  # a remote server's refusal may pass: full retries
