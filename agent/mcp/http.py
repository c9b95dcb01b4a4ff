"""The HTTP client of streamable-HTTP MCP servers, with the stdio transport's bound on a message.

The SDK reads a JSON answer whole (it bounds an SSE event, not a JSON body), so a server
that sends one answer without end would grow our memory without bound. Every response body
here goes through a counter: a JSON body over MAX_LINE_BYTES, or an SSE event over it, is
not passed on. When the request it answers has an id, the SDK gets in its place an error
answer to that request saying RESULT_TOO_LONG, so the call fails at once with the bound
named (as on stdio); otherwise the response ends with a StreamError (SPEC H10).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from agent.httpx_compat import wrap_body
from agent.mcp.stdio import MAX_LINE_BYTES, RESULT_TOO_LONG

TOO_LONG = "the server sent a message over 16 MB"
SSE_EVENT_LIMIT = 2 * MAX_LINE_BYTES
"""The SDK's own bound on one SSE event (its default is 1 MB, far below stdio's 16 MB): above
ours, so ours, which names the bound, is the one that trips."""
_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")


class MessageTooLong(httpx2.StreamError):
    """A response went past MAX_LINE_BYTES in one message (a StreamError: the SDK answers the
    waiting request with it instead of waiting for ever)."""


def _request_id(request: httpx2.Request) -> Any:
    """The JSON-RPC id of the request a response answers (None for a GET or a notification)."""
    try:
        body = json.loads(request.content or b"null")
    except (ValueError, RecursionError, httpx2.RequestNotRead):
        return None
    return body.get("id") if isinstance(body, dict) else None


def _error_answer(request_id: Any) -> bytes:
    error = {"code": -32603, "message": RESULT_TOO_LONG}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode("utf-8")


def _last_event_end(buffer: bytearray, start: int) -> int:
    """Where the last complete SSE event in `buffer` ends (0: none), searching from `start`."""
    ends = [at + len(mark) for mark in _EVENT_ENDS if (at := buffer.rfind(mark, start)) >= 0]
    return max(ends, default=0)


class _BoundedStream(httpx2.AsyncByteStream):
    """Passes a body on whole messages at a time (a JSON body, or complete SSE events), at
    most `limit` bytes each; one over it is replaced by an error answer, or ends the body."""

    def __init__(self, inner: Any, limit: int, request_id: Any, sse: bool) -> None:
        self._inner = inner
        self._limit = limit
        self._request_id = request_id
        self._sse = sse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = bytearray()  # the message being received, not yet passed on
        async for chunk in self._inner:
            searched = max(0, len(held) - 3)  # an event end may straddle two chunks
            held += chunk
            if self._sse and (end := _last_event_end(held, searched)):
                yield bytes(held[:end])
                del held[:end]
            if len(held) > self._limit:
                if self._request_id is None:
                    raise MessageTooLong(TOO_LONG)
                answer = _error_answer(self._request_id)
                yield b"data: " + answer + b"\n\n" if self._sse else answer
                return
        if held:
            yield bytes(held)

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(headers: dict[str, str], limit: int = MAX_LINE_BYTES) -> httpx2.AsyncClient:
    """An AsyncClient whose every response message (a JSON body, an SSE event) stops at
    `limit` bytes."""

    async def bound(response: httpx2.Response) -> None:
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        request_id = _request_id(response.request)
        wrap_body(response, lambda body: _BoundedStream(body, limit, request_id, sse))

    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [bound]},
    )
