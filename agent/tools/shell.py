"""The shell tool: run_shell runs a command in the workspace with a timeout and output cap.

Every command runs in a process group of its own (a new session), and the whole group is
killed on timeout, on stop and when the app exits: SIGTERM, then SIGKILL for whatever
outlives a short grace, so a child that traps SIGTERM or a background grandchild still
holding the output pipe cannot outlive the command or block the read.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent.homes import tilde
from agent.process_groups import group_alive, kill_groups, signal_group
from agent.tools import shell_background
from agent.tools.registry import (
    ApprovalRequest,
    Pending,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    cap_text,
    describe_os_error,
    one_row,
)

if TYPE_CHECKING:
    from agent.tools.sandbox import Sandbox

MAX_TIMEOUT = 3600.0
POLL = 0.05  # seconds between checks of the cancel event and the deadline
TERM_GRACE = 0.5  # seconds a process group has to exit after SIGTERM before SIGKILL
ORPHAN_GRACE = 0.5  # seconds to wait for background children still holding the output pipe
STATUS_ROOM = 300  # characters of the output cap kept for the status line


def _shell() -> list[str]:
    """The shell argv prefix: bash if available, else sh."""
    bash = shutil.which("bash")
    return [bash, "-c"] if bash else ["/bin/sh", "-c"]


class _Capture:
    """Collects a byte stream keeping only its head and tail, counting what is dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = max(cap, 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        """Add output, keeping at most `cap` bytes of head and `cap` bytes of tail."""
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.cap
        if excess > 0:
            self.dropped += excess
            del self.tail[:excess]

    def text(self, cap: int) -> str:
        """The output decoded, capped to `cap` chars with a head+tail omission marker."""
        if not self.dropped:
            return cap_text(bytes(self.head + self.tail).decode("utf-8", "replace"), cap)
        half = max(cap // 2, 1)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        omitted = max(len(head) - half, 0) + self.dropped + max(len(tail) - half, 0)
        return f"{head[:half]}\n[... {omitted} characters omitted ...]\n{tail[-half:]}"


class ProcessGroups:
    """The process groups run_shell started that may still have a live member.

    A group leaves the registry once it has no live member; groups left behind by a finished
    command (background jobs with their output redirected) are killed at exit. A process
    group id is only reused after every member of the group is gone, so a listed group is
    still ours while it has members.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._exit_hook = False

    def add(self, pgid: int) -> None:
        """Track a new command's group (and make sure the exit hook is installed)."""
        with self._lock:
            self._groups.add(pgid)
            if not self._exit_hook:
                self._exit_hook = True
                atexit.register(self.kill_all)

    def settle(self, pgid: int) -> None:
        """Forget a finished command's group unless a member outlived it."""
        if not group_alive(pgid):
            with self._lock:
                self._groups.discard(pgid)

    def live(self) -> list[int]:
        """The tracked groups that still have a live member."""
        with self._lock:
            groups = sorted(self._groups)
        return [pgid for pgid in groups if group_alive(pgid)]

    def kill_all(self) -> None:
        """Kill every tracked group (the app is exiting); blocks at most about TERM_GRACE."""
        with self._lock:
            groups = sorted(self._groups)
            self._groups.clear()
        if groups:
            kill_groups(groups, TERM_GRACE)


CHILDREN = ProcessGroups()


def kill_all_children() -> None:
    """Kill every process group run_shell started that still runs: for the app's exit path."""
    CHILDREN.kill_all()


def child_env(hidden: Collection[str]) -> dict[str, str]:
    """The command's environment: ours without the `hidden` key variables, pagers off (H5)."""
    env = {name: value for name, value in os.environ.items() if name not in hidden}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


class _Running:
    """A started command: its process, and its output pipe read into a capture."""

    def __init__(self, proc: subprocess.Popen[bytes], capture: _Capture) -> None:
        assert proc.stdout is not None
        self.proc = proc
        self.capture = capture
        self.fd = proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.eof = False
        self.exited_at: float | None = None

    def read_chunk(self) -> None:
        """Read what the pipe holds (it is readable); an empty read is its end."""
        chunk = os.read(self.fd, 65536)
        if chunk:
            self.capture.feed(chunk)
        else:
            self.eof = True
            self.selector.unregister(self.fd)

    def step(self, wait: float) -> None:
        """Read output for up to `wait` seconds, or wait for the exit once the pipe ended."""
        if not self.eof:
            for _key, _mask in self.selector.select(timeout=wait):
                self.read_chunk()
            return
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass

    def ended(self) -> str | None:
        """ "" once the shell exited and its output ended; "orphans" when background children
        still hold the pipe after ORPHAN_GRACE; None while it runs."""
        if self.proc.poll() is None:
            return None
        if self.eof:
            return ""
        # The shell exited but a background child still holds the output pipe.
        self.exited_at = self.exited_at or time.monotonic()
        if time.monotonic() - self.exited_at > ORPHAN_GRACE:
            return "orphans"
        return None

    def wait_for_end(self, cancel: threading.Event | None, deadline: float) -> str:
        """Read until the command ends: "" (it did), "orphans", "cancelled" or "timeout"."""
        while True:
            if cancel is not None and cancel.is_set():
                return "cancelled"
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            self.step(min(POLL, deadline - now))
            ended = self.ended()
            if ended is not None:
                return ended

    def kill_and_drain(self) -> None:
        """Kill the command's group, then collect what it had already written."""
        kill_groups([self.proc.pid], TERM_GRACE, reap=self.proc)
        drain_until = time.monotonic() + 0.2
        while not self.eof and time.monotonic() < drain_until:
            if self.selector.select(timeout=0.02):
                self.read_chunk()

    def close(self) -> None:
        """Close the pipe; kill the group if the shell still runs; forget a finished group."""
        self.selector.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        if self.proc.poll() is None:
            signal_group(self.proc.pid, signal.SIGKILL)
        CHILDREN.settle(self.proc.pid)


def _exit_status(code: int | None) -> str:
    if code is None:
        return "[exit status unknown]"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"[killed by signal {name}]"
    return f"[exit code {code}]"


def _status_line(reason: str, code: int | None, timeout: float, elapsed: float) -> tuple[str, bool]:
    """The line after the output that says how the command ended, and whether it is ok."""
    if reason == "cancelled":
        return "[cancelled by the user; the command and its process group were killed]", False
    if reason == "timeout":
        return (
            f"[timed out after {timeout:g} s; the command and its process group were killed]",
            False,
        )
    status = _exit_status(code)
    if reason == "orphans":
        status += (
            f"\n[background processes still holding the output after {elapsed:.1f} s "
            "were killed; to keep a server or a watcher running, start it with background: true]"
        )
    return status, code == 0


@dataclass
class Launch:
    """How a command is started: its argv and environment, the fds it gets, confinement."""

    argv: list[str]
    env: dict[str, str]
    fds: tuple[int, ...]
    confined: bool
    guarded: set[str]

    def popen_args(self, ctx: ToolContext) -> dict[str, Any]:
        """The `subprocess.Popen` arguments: in the workspace, output piped, a new session."""
        return {
            "args": self.argv,
            "cwd": ctx.workspace,
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.STDOUT,
            "start_new_session": True,
            "env": self.env,
            "pass_fds": self.fds,
        }


@contextlib.contextmanager
def _launch(
    command: str, ctx: ToolContext, extra_env: dict[str, str] | None = None
) -> Iterator[Launch]:
    """The command ready to start, under the sandbox when it is active; the seccomp
    filter's fd is open until the block ends (start the process inside it)."""
    env = {**child_env(ctx.hidden_env), **(extra_env or {})}
    argv = [*_shell(), command]
    sandbox = ctx.sandbox
    confined = sandbox is not None and sandbox.active
    guarded: set[str] = set()
    with contextlib.ExitStack() as stack:
        fds: tuple[int, ...] = ()
        if confined and sandbox is not None:
            from agent.tools.sandbox import confined_env, guarded_paths, socket_filter

            guarded = guarded_paths(ctx.workspace)
            fd = stack.enter_context(socket_filter()) if sandbox.filters_sockets else None
            fds = () if fd is None else (fd,)
            argv = sandbox.wrap(
                argv, ctx.workspace, guarded=guarded, seccomp_fd=fd, read_only=ctx.read_only
            )
            env = confined_env(env)
        yield Launch(argv, env, fds, confined, guarded)


def execute(command: str, ctx: ToolContext, timeout: float) -> ToolResult:
    """Run `command` in the workspace and report its combined output and exit status."""
    if ctx.cancel is not None and ctx.cancel.is_set():
        return ToolResult(False, "The command was not run: the turn was cancelled.")
    with _launch(command, ctx) as launch:
        try:
            proc = subprocess.Popen(**launch.popen_args(ctx))
        except OSError as exc:
            raise ToolError(f"Could not start the shell: {describe_os_error(exc)}.") from None
    confined, guarded = launch.confined, launch.guarded
    CHILDREN.add(proc.pid)  # start_new_session: the shell's pid is its group's id
    capture = _Capture(ctx.output_cap)
    start = time.monotonic()
    running = _Running(proc, capture)
    try:
        reason = running.wait_for_end(ctx.cancel, start + timeout)
        if reason:
            running.kill_and_drain()
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
    finally:
        running.close()
    body = capture.text(max(ctx.output_cap - STATUS_ROOM, 100))
    status, ok = _status_line(reason, proc.returncode, timeout, time.monotonic() - start)
    if not body.strip():
        body = "(no output)"
    if confined and ctx.read_only:
        # The tool's description says the workspace is writable: the output says otherwise.
        status += "\n[plan mode: the command ran with the workspace read-only]"
    created = sorted(_guarded_now(ctx.workspace) - guarded) if confined else []
    if created:
        # The sandbox keeps these read-only only where they already existed (X3, H3).
        status += (
            f"\n[the command created {', '.join(created)}, which can run code on its own: "
            "the user should review it]"
        )
    return ToolResult(ok, f"{body.rstrip()}\n{status}")


def _guarded_now(workspace: Any) -> set[str]:
    """The sandbox's read-only paths that exist in the workspace now."""
    from agent.tools.sandbox import guarded_paths

    return guarded_paths(workspace)


def run_shell(ctx: ToolContext, args: dict[str, Any]) -> Pending:
    """Validate a shell command and return it pending approval."""
    command: str = args["command"]
    if not command.strip():
        raise ToolError("command is empty; give a shell command to run.")
    refusal = ctx.sandbox.refusal if ctx.sandbox is not None else None
    if refusal:
        raise ToolError(refusal)
    timeout = float(args.get("timeout", ctx.shell_timeout))
    if timeout <= 0:
        raise ToolError("timeout must be a positive number of seconds.")
    timeout = min(timeout, MAX_TIMEOUT)
    background = bool(args.get("background", False))
    if background:
        shell_background.check_room(ctx)  # before the user is asked for nothing

    def request() -> ApprovalRequest:
        confinement = _confinement(ctx.sandbox)
        lasts = shell_background.KEEPS_RUNNING if background else f"timeout: {timeout:g} s"
        detail = cap_text(
            f"$ {command}\n\ncwd: {tilde(ctx.workspace)}\n{lasts}\nsandbox: {confinement}",
            20_000,
        )
        shown = "run_shell (background)" if background else "run_shell"
        return ApprovalRequest("run_shell", one_row(f"{shown} {command}"), detail)

    if background:
        return Pending(request, lambda: execute_background(command, ctx))
    return Pending(request, lambda: execute(command, ctx, timeout))


def execute_background(command: str, ctx: ToolContext) -> ToolResult:
    """Start `command` as a background process (G2): it returns after its first output."""
    if ctx.cancel is not None and ctx.cancel.is_set():
        return ToolResult(False, "The command was not run: the turn was cancelled.")
    with _launch(command, ctx, shell_background.BACKGROUND_ENV) as launch:
        result = shell_background.start(command, ctx, launch)
    if launch.confined and ctx.read_only:
        return ToolResult(
            result.ok, f"{result.output}\n[plan mode: it runs with the workspace read-only]"
        )
    return result


def _confinement(sandbox: Sandbox | None) -> str:
    """The approval dialog's `sandbox:` line: confined, or unconfined and why."""
    if sandbox is not None and sandbox.active:
        return "sandboxed (bubblewrap)"
    why = sandbox.state.reason if sandbox is not None else "the sandbox is off"
    return f"none, the command runs unconfined ({why})"


DESCRIPTION = (
    "Run a shell command (bash -c) in the workspace directory and return its combined "
    "stdout and stderr and its exit code. stdin is closed, so interactive commands fail; "
    "long output keeps its head and tail. The command and its child processes are killed "
    "after timeout seconds. For a server or a watcher that should keep running, set "
    "background: true."
)


def describe(sandbox: Sandbox | None) -> str:
    """run_shell's description for the model, telling the truth about its sandbox (X3)."""
    if sandbox is None:
        return DESCRIPTION
    return f"{DESCRIPTION} {sandbox.describe()}"


TOOLS = [
    Tool(
        name="run_shell",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout": {
                    "type": "number",
                    "description": "Seconds before the command is killed (default: the configured "
                    "shell timeout, normally 120).",
                },
                "background": {
                    "type": "boolean",
                    "description": "Run it in the background (a server, a watcher): the call "
                    "returns after its first output with an id for shell_output and "
                    "shell_stop; no timeout; it ends when stopped or when the app exits.",
                },
            },
            "required": ["command"],
        },
        handler=run_shell,
        kind="shell",
        summary_keys=("command",),
    ),
]
