"""A stdio MCP transport over a process we own: the SDK's messages, our process handling.

The SDK's `stdio_client` hides its process, so a server cannot be killed at once when it
hangs or when the app quits (its shutdown waits up to six seconds), its stderr must go to a
real file, and a server that writes one endless line is buffered without bound. This one
yields the same (read, write) streams `ClientSession` takes, and adds what a hostile or
broken server needs: its own process group (killed as a whole, SIGTERM then SIGKILL after a
short grace), a bounded stdout line, a bounded stderr tail read continuously (a flood never
blocks it), and a callback when the server's stdout closes (it exited or crashed).

A line over the bound answers the request it belongs to at once with RESULT_TOO_LONG (the
transport sees the requests go out, so it knows which are waiting), instead of leaving the
call to wait out its timeout; the rest of the line is skipped and the stream goes on at the
next line. A server that sends SKIP_LIMIT_BYTES more without a line end cannot be read
again: its stdout is given up and it is failed with that reason (SPEC H10).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
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
RESULT_TOO_LONG = "result over 16 MB, refused (the bound on one MCP message)"
"""What a request answered by a message over MAX_LINE_BYTES fails with (stdio and HTTP)."""
SKIP_LIMIT_BYTES = 4 * MAX_LINE_BYTES
"""Skipped bytes of one over-long line after which the server is given up as unreadable."""
NO_LINE_END = "sent a message over 16 MB with no line end within 64 MB, so it cannot be read on"
_HEAD_BYTES = 4096
"""How much of an over-long line is looked at to tell what it is and which request it answers."""
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,256}")')
STDERR_TAIL_BYTES = 64 * 1024
STOP_GRACE_SECONDS = 0.5
"""After stdin closes, how long a server gets to exit before SIGTERM, then before SIGKILL."""

KEEPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keeper.py")
KEEPER_WORKS = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
"""The keeper needs Linux's subreaper and /proc; elsewhere a server runs alone (its group
is still killed, a `setsid` child of it is not)."""

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


def kill_all_servers(grace: float = STOP_GRACE_SECONDS) -> None:
    """End every stdio server's process group still alive (the app is going, now): SIGTERM,
    so each keeper ends its tree, then SIGKILL after at most `grace` seconds."""
    with _LIVE_LOCK:
        pids = list(_LIVE)
        _LIVE.clear()
    for pid in pids:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and not all(map(_ended, pids)) and time.monotonic() < deadline:
        time.sleep(0.01)  # another process's exit: nothing to wait on but its state
    for pid in pids:
        _signal_group(pid, signal.SIGKILL)


def _ended(pid: int) -> bool:
    """True once `pid` has exited (a zombie not yet reaped counts)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] in (b"Z", b"X")


def _argv(spec: StdioCommand) -> list[str]:
    """The command line: the server under its keeper (keeper.py) where the keeper can work
    (Linux), else the server alone. Raises FileNotFoundError or PermissionError at once for
    a command that cannot run, as starting it directly would."""
    command = _resolved(spec)
    if not KEEPER_WORKS:
        return [command, *spec.args]
    return [sys.executable, "-I", KEEPER, str(os.getpid()), command, *spec.args]


def _resolved(spec: StdioCommand) -> str:
    command = spec.command
    if os.sep in command:
        path = command if os.path.isabs(command) else os.path.join(spec.cwd or ".", command)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, "not found", command)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, "not executable", command)
        return path
    found = shutil.which(command, path=spec.env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "not found", command)
    return found


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@asynccontextmanager
async def stdio_transport(
    spec: StdioCommand, tail: StderrTail, on_closed: Callable[[str], None]
) -> AsyncIterator[tuple[object, object]]:
    """Start the server and yield (read_stream, write_stream) for a ClientSession.

    `on_closed` is called (on the loop) when the server's stdout ends while we still use it.
    Raises OSError when the command cannot be started; `on_closed` gets "" for an exit, or
    the reason the stream was given up.
    """
    process = await anyio.open_process(
        _argv(spec),
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
    waiting = Waiting()

    async def stdout_reader() -> None:
        async with read_in:
            reason = await _read_messages(process, read_in, waiting)
        if not closing:
            on_closed(reason)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_out:
                async for message in write_out:
                    waiting.sent(message.message)
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


class Waiting:
    """The requests sent to the server and not answered yet, by their id's JSON text."""

    def __init__(self) -> None:
        self.ids: dict[str, types.RequestId] = {}

    def sent(self, message: object) -> None:
        """Note a request going out (and forget one we cancelled)."""
        if isinstance(message, types.JSONRPCRequest):
            self.ids[json.dumps(message.id)] = message.id
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
        ):
            cancelled = (message.params or {}).get("requestId")
            with contextlib.suppress(TypeError):
                self.ids.pop(json.dumps(cancelled), None)

    def received(self, item: SessionMessage | Exception) -> None:
        """Forget a request once its answer arrived."""
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.ids.pop(json.dumps(message.id), None)

    def answered_by(self, head: bytes) -> list[types.RequestId]:
        """The waiting requests an over-long line beginning with `head` answers.

        Not a JSON object: junk (a banner), none. A request or notification of the server's
        own: none. A reply: the waiting request whose id it names near its start, else every
        waiting one (a server may put its id last; failing a call wrongly beats letting each
        wait out its timeout).
        """
        head = head.lstrip()
        if not head.startswith(b"{"):
            return []
        method = head.find(b'"method"')
        found = [at for at in (head.find(b'"result"'), head.find(b'"error"')) if at >= 0]
        reply = min(found, default=-1)
        if method >= 0 and (reply < 0 or method < reply):
            return []
        for match in _ID.finditer(head):
            known = self.ids.get(match.group(1).decode("utf-8", "replace"))
            if known is not None:
                return [known]
        return list(self.ids.values())


def _too_long(request_id: types.RequestId) -> SessionMessage:
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=RESULT_TOO_LONG)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _read_messages(process: Process, sink: object, waiting: Waiting) -> str:
    """Split stdout into lines (bounded) and send each parsed message to `sink`.

    Returns "" when stdout ended, or why it was given up (a line without end).
    """
    assert process.stdout is not None
    buffer = bytearray()
    scanned = 0  # bytes of `buffer` known to hold no newline: each byte is scanned once
    skipped = -1  # bytes skipped of a line that went over the limit (-1: not skipping)
    try:
        async for chunk in process.stdout:
            buffer += chunk
            while (end := buffer.find(b"\n", scanned)) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                scanned = 0
                if skipped >= 0:
                    skipped = -1
                    continue
                if line.strip():
                    message = _parse(line)
                    waiting.received(message)
                    await sink.send(message)  # type: ignore[attr-defined]
            scanned = len(buffer)
            if skipped < 0 and len(buffer) > MAX_LINE_BYTES:
                log.warning("an MCP server sent a line over %d bytes; dropped", MAX_LINE_BYTES)
                for request_id in waiting.answered_by(bytes(buffer[:_HEAD_BYTES])):
                    waiting.ids.pop(json.dumps(request_id), None)
                    await sink.send(_too_long(request_id))  # type: ignore[attr-defined]
                skipped = 0
            if skipped >= 0:
                skipped += len(buffer)
                buffer.clear()
                scanned = 0
                if skipped > SKIP_LIMIT_BYTES:
                    return NO_LINE_END
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        pass
    return ""


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
