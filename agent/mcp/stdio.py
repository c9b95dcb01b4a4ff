"""A stdio MCP transport over a process we own: the SDK's messages, our process handling.

The SDK's `stdio_client` hides its process, so a server cannot be killed at once when it
hangs or when the app quits (its shutdown waits up to six seconds), its stderr must go to a
real file, and a server that writes one endless line is buffered without bound. This one
yields the same (read, write) streams `ClientSession` takes, and adds what a hostile or
broken server needs: its own process group (killed as a whole, SIGTERM then SIGKILL after a
short grace), a bounded stdout line, a bounded stderr tail read continuously (a flood never
blocks it), and a callback when the server's stdout closes (it exited or crashed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp.shared.message import SessionMessage

from agent.text_cuts import cut_with_ellipsis

log = logging.getLogger("hermes_tui.mcp")

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A stdout line (one JSON-RPC message) longer than this is dropped, not buffered."""
STDERR_TAIL_BYTES = 64 * 1024
STOP_GRACE_SECONDS = 0.5
"""After stdin closes, how long a server gets to exit before SIGTERM, then before SIGKILL."""

_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()


@dataclass
class StderrTail:
    """The last STDERR_TAIL_BYTES a server wrote to stderr; flood-proof."""

    data: bytearray = field(default_factory=bytearray)
    total: int = 0
    closed: bool = False
    """True once the server's stderr ended (it exited, or closed it)."""

    def feed(self, chunk: bytes) -> None:
        """Keep `chunk`, dropping the oldest bytes beyond the tail's size."""
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > STDERR_TAIL_BYTES:
            del self.data[: len(self.data) - STDERR_TAIL_BYTES]

    def text(self) -> str:
        """The tail as text (undecodable bytes replaced)."""
        return bytes(self.data).decode("utf-8", "replace")

    def last_line(self, width: int = 300) -> str:
        """The last non-empty line, cut to `width` characters ("" when there is none)."""
        for line in reversed(self.text().splitlines()):
            if line.strip():
                return cut_with_ellipsis(line.strip(), width)
        return ""


@dataclass(frozen=True)
class StdioCommand:
    """What to run: the command, its arguments, its whole environment and its folder."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None


def kill_all_servers() -> None:
    """SIGKILL every stdio server's process group still alive (the app is going, now)."""
    with _LIVE_LOCK:
        pids = list(_LIVE)
        _LIVE.clear()
    for pid in pids:
        _signal_group(pid, signal.SIGKILL)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@asynccontextmanager
async def stdio_transport(
    spec: StdioCommand, tail: StderrTail, on_closed: Callable[[], None]
) -> AsyncIterator[tuple[object, object]]:
    """Start the server and yield (read_stream, write_stream) for a ClientSession.

    `on_closed` is called (on the loop) when the server's stdout ends while we still use it.
    Raises OSError when the command cannot be started.
    """
    process = await anyio.open_process(
        [spec.command, *spec.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=spec.env,
        cwd=spec.cwd,
        start_new_session=True,  # its own process group: one kill reaches its children
    )
    with _LIVE_LOCK:
        _LIVE.add(process.pid)
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    closing = False

    async def stdout_reader() -> None:
        async with read_in:
            await _read_messages(process, read_in)
        if not closing:
            on_closed()

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_out:
                async for message in write_out:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()  # a request must see the end, not wait for ever

    async def stderr_reader() -> None:
        assert process.stderr is not None
        try:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for chunk in process.stderr:
                    tail.feed(chunk)
        finally:
            tail.closed = True

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(stdout_reader)
            group.start_soon(stdin_writer)
            group.start_soon(stderr_reader)
            try:
                yield read_out, write_in
            finally:
                closing = True
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                group.cancel_scope.cancel()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(process.pid)


async def _read_messages(process: Process, sink: object) -> None:
    """Split stdout into lines (bounded) and send each parsed message to `sink`."""
    assert process.stdout is not None
    buffer = bytearray()
    scanned = 0  # bytes of `buffer` known to hold no newline: each byte is scanned once
    skipping = False  # inside a line that went over the limit
    try:
        async for chunk in process.stdout:
            buffer += chunk
            while (end := buffer.find(b"\n", scanned)) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                scanned = 0
                if skipping:
                    skipping = False
                    continue
                if line.strip():
                    await sink.send(_parse(line))  # type: ignore[attr-defined]
            scanned = len(buffer)
            if len(buffer) > MAX_LINE_BYTES:
                if not skipping:
                    log.warning("an MCP server sent a line over %d bytes; dropped", MAX_LINE_BYTES)
                    await sink.send(ValueError("the server sent a message over 16 MB"))  # type: ignore[attr-defined]
                skipping = True
                buffer.clear()
                scanned = 0
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        pass


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: Process) -> None:
    """Close stdin, give the server a moment, then SIGTERM and SIGKILL its whole group."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if await _exited(process, STOP_GRACE_SECONDS):
            break
        _signal_group(process.pid, sig)
    else:
        await _exited(process, STOP_GRACE_SECONDS)
    # Whatever it left in the group (a grandchild holding a pipe) goes with it.
    _signal_group(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError):
                await stream.aclose()
    with contextlib.suppress(Exception):
        await process.aclose()


async def _exited(process: Process, timeout: float) -> bool:
    """Whether the process has exited within `timeout` (returncode polled, no pipe wait)."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
