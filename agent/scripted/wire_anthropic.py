"""Anthropic messages encoding: SSE events, the non-streaming body and error bodies."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from agent.scripted.script import Reply, RequestInfo
from agent.scripted.wire_openai import pieces, usage_counts

_q = json.encoder.encode_basestring_ascii

_STOP = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "tool_calls": "tool_use",
    "tool_use": "tool_use",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

MALFORMED_CHUNK = (
    b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "de\n\n'
)


def stop_reason(reply: Reply) -> str:
    """The Anthropic stop_reason for a reply."""
    if reply.finish_reason:
        return _STOP.get(reply.finish_reason, reply.finish_reason)
    return "tool_use" if reply.tool_calls else "end_turn"


def signature_for(reply: Reply) -> str:
    """The thinking signature: scripted ("" sends an unsigned block), else a digest."""
    if reply.signature is not None:
        return reply.signature
    digest = hashlib.sha256((reply.reasoning or "").encode("utf-8")).digest()
    return "sig_" + base64.b64encode(digest).decode("ascii")


def _event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event."""
    return b"event: " + name.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def stream_events(reply: Reply, request: RequestInfo, message_id: str) -> Iterator[bytes]:
    """Yield the SSE events of a streamed Anthropic message."""
    inp, out, extra = usage_counts(reply, request)
    start_usage: dict[str, Any] = {"input_tokens": inp, "output_tokens": 1}
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if key in extra:
            start_usage[key] = extra[key]
    yield _event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": request.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        },
    )
    yield b'event: ping\ndata: {"type": "ping"}\n\n'
    size = reply.chunk_size or 12
    index = 0
    delta_head = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'

    def stop_block(i: int) -> bytes:
        return _event("content_block_stop", {"type": "content_block_stop", "index": i})

    if reply.reasoning:
        yield _event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
        head = delta_head + b'%d,"delta":{"type":"thinking_delta","thinking":' % index
        for piece in pieces(reply.reasoning, size):
            yield head + _q(piece).encode() + b"}}\n\n"
        signature = signature_for(reply)
        if signature:
            yield _event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": signature},
                },
            )
        yield stop_block(index)
        index += 1
    if reply.text:
        yield _event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        head = delta_head + b'%d,"delta":{"type":"text_delta","text":' % index
        for piece in pieces(reply.text, size):
            yield head + _q(piece).encode() + b"}}\n\n"
        yield stop_block(index)
        index += 1
    for call in reply.tool_calls:
        block: dict[str, Any] = {"type": "tool_use"}
        if call.id is not None:
            block["id"] = call.id
        block["name"] = call.name
        block["input"] = {}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
        head = delta_head + b'%d,"delta":{"type":"input_json_delta","partial_json":' % index
        for piece in pieces(call.arguments_json, size):
            yield head + _q(piece).encode() + b"}}\n\n"
        yield stop_block(index)
        index += 1
    if reply.omit_finish:
        return
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": out},
        },
    )
    yield b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def message_body(reply: Reply, request: RequestInfo, message_id: str) -> dict[str, Any]:
    """The non-streaming message body."""
    inp, out, extra = usage_counts(reply, request)
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append(
            {"type": "thinking", "thinking": reply.reasoning, "signature": signature_for(reply)}
        )
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        block: dict[str, Any] = {"type": "tool_use"}
        if call.id is not None:
            block["id"] = call.id
        block.update({"name": call.name, "input": call.arguments_object})
        content.append(block)
    usage: dict[str, Any] = {"input_tokens": inp, "output_tokens": out}
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if key in extra:
            usage[key] = extra[key]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": content,
        "stop_reason": None if reply.omit_finish else stop_reason(reply),
        "stop_sequence": None,
        "usage": usage,
    }


def error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    """An Anthropic-shaped error body for an HTTP status."""
    default = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": error_type or default, "message": message}}
