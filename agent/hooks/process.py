"""Running one hook command: a shell of its own process group, JSON on stdin, a timeout.

The command is the user's own (or a project's, after consent), so it runs unsandboxed, in the
workspace, like a command typed in a terminal there; key variables are withheld as from
run_shell (H5). Its stdout and stderr are read as they come, keeping the first OUTPUT_CAP
bytes of each (the rest is drained, so a chatty hook never blocks on a full pipe). At its
timeout, or a stop, its whole group is killed; once it has exited, what is left of its group
is killed too, so nothing a hook started outlives its run (H10).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

OUTPUT_CAP = 64 * 1024
"""Bytes of stdout, and separately of stderr, kept of one run."""
DRAIN_AFTER_EXIT = 0.5
"""Seconds the pipes are read after the hook exited (a child of it may still hold them)."""
POLL = 0.05
"""How often a running hook's wait looks at the stop flag."""


@dataclass(frozen=True)
class HookRun:
    """What one run did: its exit code (None: it never ended on its own), its output, why not."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    stopped: bool = False
    failed_to_start: str = ""
    truncated: bool = False


def run_command(
    command: str,
    stdin: bytes,
    *,
    cwd: Path,
    timeout: float,
    hidden_env: Collection[str] = (),
    extra_env: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> HookRun:
    """Run `command` with `stdin`; blocks the calling thread at most about `timeout`."""
    coro = _run(command, stdin, cwd, timeout, hidden_env, extra_env or {}, cancel)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called on a loop's thread (never done by the turn, but safe): a loop of its own.
    box: list[HookRun] = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(coro)), daemon=True)
    thread.start()
    thread.join()
    return box[0]


async def _run(
    command: str,
    stdin: bytes,
    cwd: Path,
    timeout: float,
    hidden_env: Collection[str],
    extra_env: dict[str, str],
    cancel: threading.Event | None,
) -> HookRun:
    from agent.tools.shell import CHILDREN, child_env

    started = time.monotonic()
    env = {**child_env(hidden_env), **extra_env}
    try:
        proc = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own group: a timeout ends all it started
        )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return HookRun(None, "", "", time.monotonic() - started, failed_to_start=reason)
    CHILDREN.add(proc.pid)  # the app's exit kills it too
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capped(), _Capped()
    readers = [
        asyncio.ensure_future(out.read(proc.stdout)),
        asyncio.ensure_future(err.read(proc.stderr)),
    ]
    writer = asyncio.ensure_future(_feed(proc.stdin, stdin))
    deadline = started + timeout
    timed_out = stopped = False
    try:
        while proc.returncode is None:
            if cancel is not None and cancel.is_set():
                stopped = True
                break
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), min(POLL, left))
        if proc.returncode is not None:
            await asyncio.wait(readers, timeout=DRAIN_AFTER_EXIT)
    finally:
        _kill_group(proc.pid)
        with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
            await asyncio.wait_for(proc.wait(), 2.0)
        # The group is dead: its pipes reach end of file at once, and reading them to the end
        # lets the transport close (cancelled mid-read, it is left to the garbage collector,
        # which may find its loop closed). Bounded: a child that left the group may hold them.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()
        await asyncio.wait([*readers, writer], timeout=DRAIN_AFTER_EXIT)
        for task in (*readers, writer):
            task.cancel()
        await asyncio.gather(*readers, writer, return_exceptions=True)
        CHILDREN.settle(proc.pid)
    code = None if (timed_out or stopped) else proc.returncode
    return HookRun(
        code,
        out.text(),
        err.text(),
        time.monotonic() - started,
        timed_out=timed_out,
        stopped=stopped,
        truncated=out.truncated or err.truncated,
    )


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """Write the event and close stdin; a hook that does not read it is no error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.write(data)
        await pipe.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _Capped:
    """One pipe's first OUTPUT_CAP bytes; what follows is read and dropped."""

    def __init__(self) -> None:
        self._data = bytearray()
        self.truncated = False

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            room = OUTPUT_CAP - len(self._data)
            if room > 0:
                self._data += chunk[:room]
            if len(chunk) > room:
                self.truncated = True

    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")
