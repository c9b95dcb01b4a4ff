"""Background shell processes (G2): what `run_shell` with `background: true` started, read
and stopped by id, and ended with the app.

Each runs in a process group of its own, its output (stdout and stderr together) kept in a
ring of the last BUFFER_BYTES bytes; at most MAX_RUNNING run at once. Every one is started
from one long-lived thread (`Launcher`): bubblewrap's `--die-with-parent` is a parent-death
signal, which Linux sends when the *thread* that started the sandbox ends, so a sandbox
started from a tool call's thread would die with that call. From the launcher it dies with
the app instead, even one that is killed; a normal exit stops each one first and says which.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from agent.listening_ports import listening_ports
from agent.process_groups import group_alive, kill_groups

MAX_RUNNING = 8
"""Background processes that may run at once; one more is refused."""
BUFFER_BYTES = 1_000_000
"""Output kept per process (the newest); older output is dropped and counted."""
FIRST_OUTPUT_SECONDS = 1.5
"""How long run_shell waits for a background command's first output before it returns."""
QUIET_SECONDS = 0.25
"""Once output came, this much silence ends the first-output wait early."""
STOP_GRACE = 2.0
"""Seconds a stopped process group has after SIGTERM before SIGKILL."""
EXIT_GRACE = 1.0
"""The same at the app's exit, for all of them at once (the exit must not wait long)."""
KEPT_ENDED = 16
"""Ended processes kept listed (their last output readable); older ones are forgotten."""
LAUNCH_TIMEOUT = 30.0


class BackgroundError(Exception):
    """A background request that cannot be met; the message is one sentence for the model."""


class OutputRing:
    """The newest `cap` bytes of a stream, and how many bytes it has had in all."""

    def __init__(self, cap: int = BUFFER_BYTES) -> None:
        self.cap = cap
        self.total = 0
        self._data = bytearray()
        self._lock = threading.Lock()

    def feed(self, chunk: bytes) -> None:
        """Add output, dropping the oldest beyond the cap."""
        with self._lock:
            self._data += chunk
            self.total += len(chunk)
            excess = len(self._data) - self.cap
            if excess > 0:
                del self._data[:excess]

    def since(self, offset: int) -> tuple[bytes, int, int]:
        """The output after stream position `offset`, how much of it was dropped, and the
        position it ends at."""
        with self._lock:
            start = self.total - len(self._data)
            dropped = max(start - offset, 0)
            return bytes(self._data[max(offset, start) - start :]), dropped, self.total

    def tail_lines(self, count: int) -> list[str]:
        """The last `count` lines, decoded."""
        with self._lock:
            tail = bytes(self._data[-64 * 1024 :])
        return tail.decode("utf-8", "replace").splitlines()[-count:]


class Launcher:
    """The one thread every background process is started from (see the module's note)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[dict[str, Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, **kwargs: Any) -> subprocess.Popen[bytes]:
        """`subprocess.Popen(**kwargs)`, run on the launcher thread."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="background-launcher", daemon=True
                )
                self._thread.start()
        future: Future[subprocess.Popen[bytes]] = Future()
        self._queue.put((kwargs, future))
        return future.result(timeout=LAUNCH_TIMEOUT)

    def _serve(self) -> None:
        while True:
            kwargs, future = self._queue.get()
            try:
                future.set_result(subprocess.Popen(**kwargs))
            except BaseException as exc:  # the caller raises it
                future.set_exception(exc)


LAUNCHER = Launcher()


@dataclass(eq=False)
class BackgroundProcess:
    """One background command: its id, its process group and its output."""

    id: str
    command: str
    proc: subprocess.Popen[bytes]
    private_network: bool
    """True under a sandbox without the network: its ports are on a loopback of its own."""
    started_at: float = field(default_factory=time.monotonic)
    ring: OutputRing = field(default_factory=OutputRing)
    read_to: int = 0
    """The stream position shell_output has read up to."""
    ended_by: str = ""
    """"stop" (shell_stop or /ps) or "exit" (the app's), once one of them ended it."""
    finished: threading.Event = field(default_factory=threading.Event)
    """Set once its output ended and the process it started was reaped."""

    @property
    def pgid(self) -> int:
        """Its process group (start_new_session: the started process's pid)."""
        return self.proc.pid

    @property
    def running(self) -> bool:
        """True while a process of its group runs (a shell that left a child running too)."""
        return self.proc.poll() is None or group_alive(self.pgid)

    def ports(self) -> list[int]:
        """The TCP ports its processes listen on now."""
        return listening_ports(self.pgid) if self.running else []

    def age(self, now: float | None = None) -> float:
        """Seconds since it started."""
        return (time.monotonic() if now is None else now) - self.started_at

    def state(self) -> str:
        """ "running", "stopped", "exited with code N" or "killed by SIGNAME"."""
        if self.running:
            return "running"
        if self.ended_by:
            return "stopped"
        code = self.proc.returncode
        if code is None:
            return "ended"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exited with code {code}"

    def label(self) -> str:
        """`bg1 (python3 -m http.server)`."""
        return f"{self.id} ({self.command})"

    def _read(self) -> None:
        """The reader thread: the pipe into the ring until its end, then the exit reaped."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        try:
            while chunk := _read_some(fd):
                self.ring.feed(chunk)
        finally:
            self.proc.stdout.close()
            self.proc.wait()  # a daemon thread: a process that closed its output may run on
            self.finished.set()


def _read_some(fd: int) -> bytes:
    import os

    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


_TABLES: weakref.WeakSet[BackgroundTable] = weakref.WeakSet()
_exit_hook = threading.Lock()
_hooked = False


def _stop_every_table() -> None:
    """At interpreter exit: no background process outlives the app, whatever closed it."""
    for table in list(_TABLES):
        table.stop_all()


class BackgroundTable:
    """A list of background processes; the app's is BACKGROUND (its agents share it)."""

    def __init__(
        self,
        *,
        limit: int = MAX_RUNNING,
        buffer_bytes: int = BUFFER_BYTES,
        grace: float = STOP_GRACE,
        launcher: Launcher = LAUNCHER,
    ) -> None:
        self.limit = limit
        self.buffer_bytes = buffer_bytes
        self.grace = grace
        self._launcher = launcher
        self._lock = threading.Lock()
        self._entries: dict[str, BackgroundProcess] = {}
        self._next = 1
        global _hooked
        with _exit_hook:
            if not _hooked:
                _hooked = True
                atexit.register(_stop_every_table)
        _TABLES.add(self)

    def processes(self) -> list[BackgroundProcess]:
        """Every listed process, oldest first."""
        with self._lock:
            return list(self._entries.values())

    def running(self) -> list[BackgroundProcess]:
        """The listed processes still running."""
        return [entry for entry in self.processes() if entry.running]

    def check_room(self) -> None:
        """Raise BackgroundError when `limit` processes run already."""
        running = self.running()
        if len(running) >= self.limit:
            raise BackgroundError(self._full([entry.id for entry in running]))

    def _full(self, ids: list[str]) -> str:
        plural = "es" if self.limit != 1 else ""
        return (
            f"Refused: {self.limit} background process{plural} already run ({', '.join(ids)}), "
            "the most at once; stop one with shell_stop first."
        )

    def start(
        self, command: str, popen: dict[str, Any], *, private_network: bool
    ) -> BackgroundProcess:
        """Start `command` (the Popen arguments `popen`, whose output is a pipe) and list it."""
        with self._lock:
            # Under the lock: two calls of one batch cannot both take the last place.
            running = [key for key, entry in self._entries.items() if entry.running]
            if len(running) >= self.limit:
                raise BackgroundError(self._full(running))
            proc = self._launcher.popen(**popen)
            entry = BackgroundProcess(
                f"bg{self._next}",
                command,
                proc,
                private_network,
                ring=OutputRing(self.buffer_bytes),
            )
            self._next += 1
            self._entries[entry.id] = entry
            self._forget_old_ended()
        reader = threading.Thread(target=entry._read, name=f"{entry.id}-output", daemon=True)
        reader.start()
        return entry

    def _forget_old_ended(self) -> None:
        ended = [key for key, entry in self._entries.items() if not entry.running]
        for key in ended[: max(len(ended) - KEPT_ENDED, 0)]:
            del self._entries[key]

    def get(self, process_id: str) -> BackgroundProcess:
        """The process called `process_id`, or BackgroundError naming the ones there are."""
        with self._lock:
            entry = self._entries.get(process_id.strip())
            known = ", ".join(self._entries) or "none"
        if entry is None:
            raise BackgroundError(
                f"There is no background process {process_id!r}; this session's are: {known}."
            )
        return entry

    def first_output(
        self, entry: BackgroundProcess, stopped: Callable[[], bool] = lambda: False
    ) -> None:
        """Wait up to FIRST_OUTPUT_SECONDS for the command's first output (or its end)."""
        deadline = time.monotonic() + FIRST_OUTPUT_SECONDS
        seen, seen_at = 0, 0.0
        while not stopped() and not entry.finished.is_set():
            now = time.monotonic()
            total = entry.ring.total
            if total != seen:
                seen, seen_at = total, now
            if now >= deadline or (seen and now - seen_at >= QUIET_SECONDS):
                return
            entry.finished.wait(0.02)

    def read(self, process_id: str, cap: int) -> str:
        """What the process wrote since the last read (its newest `cap` characters), under a
        line that says how it is; notes say what was dropped or cut."""
        entry = self.get(process_id)
        data, dropped, end = entry.ring.since(entry.read_to)
        entry.read_to = end
        text = data.decode("utf-8", "replace")
        notes = []
        if dropped:
            notes.append(
                f"[{dropped} bytes of output were dropped unread: only the newest "
                f"{self.buffer_bytes} bytes are kept]"
            )
        if len(text) > cap:
            notes.append(f"[... {len(text) - cap} earlier characters not shown ...]")
            text = text[-cap:]
        body = text.rstrip() or "(no new output)"
        return "\n".join([f"[{describe(entry)}]", *notes, body])

    def stop(self, process_id: str) -> str:
        """End the process's whole group (SIGTERM, then SIGKILL after the grace): what happened."""
        entry = self.get(process_id)
        if not entry.running:
            return f"{entry.label()} is not running: it {entry.state()}."
        entry.ended_by = "stop"
        killed = kill_groups([entry.pgid], self.grace, reap=entry.proc)
        entry.finished.wait(0.5)  # its last output, when it wrote some on the way out
        if killed:
            return (
                f"Stopped {entry.label()}: it did not end within {self.grace:g} s of SIGTERM, "
                "so it was killed (SIGKILL)."
            )
        return f"Stopped {entry.label()} (SIGTERM)."

    def stop_all(self, grace: float = EXIT_GRACE) -> list[BackgroundProcess]:
        """End every running one at once (the app exits); returns those it stopped."""
        running = self.running()
        for entry in running:
            entry.ended_by = "exit"
        if running:
            kill_groups([entry.pgid for entry in running], grace)
        return running


def describe(entry: BackgroundProcess, now: float | None = None) -> str:
    """`bg1 running for 12 s, listening on port 8000 (...)`: its state in a line."""
    line = f"{entry.id} {entry.state()}"
    if entry.running:
        line += f" for {int(entry.age(now))} s"
        ports = entry.ports()
        if ports:
            line += ", listening on port" + ("s " if len(ports) > 1 else " ")
            line += ", ".join(str(port) for port in ports)
            if entry.private_network:
                line += f" ({PRIVATE_NETWORK})"
    return line


PRIVATE_NETWORK = "on the sandbox's own loopback: reachable from this command only"


def stopped_sentence(stopped: list[BackgroundProcess]) -> str | None:
    """`Stopped 2 background processes: bg1 (...), bg2 (...).`, or None for none."""
    if not stopped:
        return None
    plural = "es" if len(stopped) > 1 else ""
    named = ", ".join(f"{entry.id} ({_short(entry.command)})" for entry in stopped)
    return f"Stopped {len(stopped)} background process{plural}: {named}."


def will_stop_sentence(running: list[BackgroundProcess]) -> str | None:
    """`2 background processes will be stopped: bg1 (...), bg2 (...)` (what quitting
    stops, asked before it does), or None for none."""
    if not running:
        return None
    plural = "es" if len(running) > 1 else ""
    named = ", ".join(f"{entry.id} ({_short(entry.command)})" for entry in running)
    return f"{len(running)} background process{plural} will be stopped: {named}"


def _short(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 1] + "…"


BACKGROUND = BackgroundTable()
"""The background processes of this process: one app, its agent and its subagents."""
