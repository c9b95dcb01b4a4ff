"""The HTTP client of streamable-HTTP MCP servers, with the stdio transport's bound on a line.

The SDK reads a JSON answer whole (it bounds an SSE event, not a JSON body), so a server
that sends one answer without end would grow our memory without bound. Every response body
here is read through a counter: more than MAX_LINE_BYTES without a line break ends the
response with one sentence, the same bound a stdio server's line has.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2

from agent.mcp.stdio import MAX_LINE_BYTES

TOO_LONG = "the server sent a message over 16 MB"


class MessageTooLong(httpx2.StreamError):
    """A response went past MAX_LINE_BYTES without a line break (a StreamError: the SDK
    answers the waiting request with it instead of waiting for ever)."""


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        run = 0  # bytes since the last line break
        async for chunk in self._inner:
            newline = chunk.rfind(b"\n")
            run = len(chunk) - newline - 1 if newline >= 0 else run + len(chunk)
            if run > self._limit:
                raise MessageTooLong(TOO_LONG)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(headers: dict[str, str], limit: int = MAX_LINE_BYTES) -> httpx2.AsyncClient:
    """An AsyncClient whose every response body stops at `limit` bytes without a newline."""

    async def bound(response: httpx2.Response) -> None:
        response.stream = _BoundedStream(response.stream, limit)

    return httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [bound]},
    )
