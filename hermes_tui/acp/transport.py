"""Newline-delimited JSON-RPC over stdio that answers what it cannot read (E1).

The SDK's own reader logs a line that is not JSON and drops it, so a client that sent one
waits forever; here such a line gets JSON-RPC's parse error, and a message that is no
request, notification or response gets "invalid request", each with the id when it has one.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class StdioTransport:
    """The SDK's `Transport` over stdin and stdout (asyncio streams): one message a line."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message and wait until the pipe took it (a slow client pushes back)."""
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        async with self._lock:
            if self._writer.is_closing():
                raise ConnectionError("the client has gone")
            self._writer.write(data)
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message; None at the end of input. Bad ones are answered."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                await self._error(None, PARSE_ERROR, "Parse error: a line that is not JSON")
                continue
            problem = _shape_problem(message)
            if problem is None and isinstance(message, dict):
                return message
            ident = message.get("id") if isinstance(message, dict) else None
            if isinstance(message, dict) and "method" not in message and "id" in message:
                continue  # a malformed response: nobody waits for an answer to it
            await self._error(ident, INVALID_REQUEST, f"Invalid Request: {problem}")

    async def close(self) -> None:
        """Close stdout (the client sees the end of our output)."""
        if not self._writer.is_closing():
            self._writer.close()

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
        except asyncio.LimitOverrunError:
            # A line over the buffer's limit: read it out and refuse it whole.
            await self._skip_line()
            await self._error(None, INVALID_REQUEST, "Invalid Request: the message is too long")
            return b""
        except (ConnectionError, ValueError):
            return None
        return line or None

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _error(self, ident: Any, code: int, message: str) -> None:
        ok_id = ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None
        try:
            await self.send(
                {"jsonrpc": "2.0", "id": ok_id, "error": {"code": code, "message": message}}
            )
        except (ConnectionError, RuntimeError):
            pass  # the client has gone: nobody to tell


def _shape_problem(message: Any) -> str | None:
    """Why `message` is no JSON-RPC 2.0 message, or None when it is one."""
    if not isinstance(message, dict):
        return "a message must be a JSON object (batches are not supported)"
    if message.get("jsonrpc") != "2.0":
        return 'the "jsonrpc" member must be "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return 'the "method" member must be a string'
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return 'the "params" member must be an object or an array'
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return "neither a request, a notification nor a response"
