"""OpenAI chat-completions encoding: SSE chunks, the non-streaming body and error bodies."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from typing import Any

from agent.scripted.script import Reply, RequestInfo

_q = json.encoder.encode_basestring_ascii

_FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "length": "length",
    "max_tokens": "length",
}
_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout", None),
    409: ("conflict", None),
    413: ("invalid_request_error", "request_too_large"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "overloaded"),
    529: ("server_error", "overloaded"),
}

MALFORMED_CHUNK = b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oops\n\n'
DONE = b"data: [DONE]\n\n"


def pieces(text: str, size: int) -> list[str]:
    """Split text into pieces of at most `size` characters."""
    size = max(1, int(size or 1))
    return [text[i : i + size] for i in range(0, len(text), size)]


def finish_reason(reply: Reply) -> str:
    """The OpenAI finish_reason for a reply."""
    if reply.finish_reason:
        return _FINISH.get(reply.finish_reason, reply.finish_reason)
    return "tool_calls" if reply.tool_calls else "stop"


def usage_counts(reply: Reply, request: RequestInfo) -> tuple[int, int, dict[str, int]]:
    """(input, output, extras) token counts: scripted, else derived from lengths."""
    given = dict(reply.usage or {})
    chars = len(reply.text or "") + len(reply.reasoning or "")
    chars += sum(len(c.name) + len(c.arguments_json) for c in reply.tool_calls)
    derived_out = max(1, math.ceil(chars / 4))
    derived_in = max(1, len(request.raw_text) // 4)
    inp = int(given.pop("input_tokens", given.pop("prompt_tokens", derived_in)))
    out = int(given.pop("output_tokens", given.pop("completion_tokens", derived_out)))
    given.pop("cost", None)  # dollars, not tokens: `_usage` sends it as it is
    return inp, out, {k: int(v) for k, v in given.items()}


def _usage(reply: Reply, request: RequestInfo) -> dict[str, Any]:
    """The OpenAI usage object."""
    inp, out, extra = usage_counts(reply, request)
    usage: dict[str, Any] = {
        "prompt_tokens": inp,
        "completion_tokens": out,
        "total_tokens": inp + out,
    }
    cached = extra.get("cached_tokens", extra.get("cache_read_input_tokens"))
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if "reasoning_tokens" in extra:
        usage["completion_tokens_details"] = {"reasoning_tokens": extra["reasoning_tokens"]}
    if reply.usage and "cost" in reply.usage:
        usage["cost"] = reply.usage["cost"]  # OpenRouter's cost of the call, in USD
    return usage


def stream_events(
    reply: Reply, request: RequestInfo, response_id: str, reasoning_key: str
) -> Iterator[bytes]:
    """Yield the SSE events (`data: ...\\n\\n` bytes) of a streamed chat completion."""
    created = int(time.time())
    head = (
        f'data: {{"id":{_q(response_id)},"object":"chat.completion.chunk","created":{created},'
        f'"model":{_q(request.model)},"system_fingerprint":null,"choices":[{{"index":0,"delta":'
    ).encode()
    tail = b',"logprobs":null,"finish_reason":null}]}\n\n'
    size = reply.chunk_size or 12

    yield head + b'{"role":"assistant","content":""}' + tail
    if reply.reasoning:
        key = b'{"' + reasoning_key.encode() + b'":'
        for piece in pieces(reply.reasoning, size):
            yield head + key + _q(piece).encode() + b"}" + tail
    if reply.text:
        for piece in pieces(reply.text, size):
            yield head + b'{"content":' + _q(piece).encode() + b"}" + tail
    for index, call in enumerate(reply.tool_calls):
        first: dict[str, Any] = {"index": index}
        if call.id is not None:
            first["id"] = call.id
        first["type"] = "function"
        first["function"] = {"name": call.name, "arguments": ""}
        yield head + json.dumps({"tool_calls": [first]}).encode() + tail
        arg_head = b'{"tool_calls":[{"index":%d,"function":{"arguments":' % index
        for piece in pieces(call.arguments_json, size):
            yield head + arg_head + _q(piece).encode() + b"}}]}" + tail
    if reply.omit_finish:
        yield DONE
        return
    yield (
        head
        + b'{},"logprobs":null,"finish_reason":'
        + _q(finish_reason(reply)).encode()
        + b"}]}\n\n"
    )
    usage_chunk = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": request.model,
        "system_fingerprint": None,
        "choices": [],
        "usage": _usage(reply, request),
    }
    yield b"data: " + json.dumps(usage_chunk).encode() + b"\n\n"
    yield DONE


def completion_body(
    reply: Reply, request: RequestInfo, response_id: str, reasoning_key: str
) -> dict[str, Any]:
    """The non-streaming `chat.completion` body."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message[reasoning_key] = reply.reasoning
    if reply.tool_calls:
        calls = []
        for call in reply.tool_calls:
            item: dict[str, Any] = {}
            if call.id is not None:
                item["id"] = call.id
            item["type"] = "function"
            item["function"] = {"name": call.name, "arguments": call.arguments_json}
            calls.append(item)
        message["tool_calls"] = calls
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": None if reply.omit_finish else finish_reason(reply),
            }
        ],
        "usage": _usage(reply, request),
    }


def error_body(
    status: int, message: str, error_type: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-shaped error body for an HTTP status."""
    default_type, default_code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {
        "error": {
            "message": message,
            "type": error_type or default_type,
            "param": None,
            "code": code if code is not None else default_code,
        }
    }
