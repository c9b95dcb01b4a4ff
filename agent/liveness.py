"""Liveness: the activity clock and heartbeat (L1), the stall watchdog (L2), an honest turn
state (L3) and the code-skew guard (L4)."""

from __future__ import annotations

import logging
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent import events as ev

log = logging.getLogger("hermes_tui.liveness")

HEARTBEAT_INTERVAL = 5.0
SILENCE_AFTER = 3.0


class ActivityClock:
    """Touched by every chunk, tool step and compaction progress; stamps a throttled heartbeat.

    `touch()` is on the streaming hot path: one clock read and one comparison. The heartbeat
    callback (which writes `sessions.last_activity_at`) runs at most once per `interval`.
    """

    def __init__(
        self,
        heartbeat: Callable[[float], None] | None = None,
        *,
        interval: float = HEARTBEAT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._heartbeat = heartbeat
        self.interval = interval
        self.last = clock()
        self._stamped = float("-inf")

    def touch(self) -> None:
        """Record activity now; stamp the heartbeat when the last stamp is old enough."""
        now = self._clock()
        self.last = now
        if now - self._stamped >= self.interval and self._heartbeat is not None:
            self._stamped = now
            self._heartbeat(time.time())

    def idle_for(self) -> float:
        """Seconds since the last activity."""
        return self._clock() - self.last

    def reset(self) -> None:
        """Start a new turn: activity now, and the next touch stamps at once."""
        self.last = self._clock()
        self._stamped = float("-inf")


class StallWatchdog:
    """Warns once per episode when a busy turn is silent while the user's input waits (L2).

    It never kills the turn. `check()` is called periodically (the TUI: once a second) and
    returns "warn" when the banner should appear, "clear" when it should go, else None.
    """

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.warned = False

    def check(self, *, busy: bool, waiting: int, idle_for: float) -> str | None:
        """Decide whether the stall banner appears, clears, or stays as it is."""
        stalled = busy and waiting > 0 and idle_for >= self.timeout
        if stalled and not self.warned:
            self.warned = True
            log.warning(
                "turn stalled: no activity for %.0f s while %d input(s) wait", idle_for, waiting
            )
            return "warn"
        if self.warned and not stalled:
            self.warned = False
            return "clear"
        return None

    def message(self, idle_for: float) -> str:
        """The banner's text."""
        return (
            f"No activity for {format_duration(idle_for)} while your message waits: /stop or /new"
        )


def format_duration(seconds: float) -> str:
    """`12 s`, `5 min`, `1 h 5 min`: short and human."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


@dataclass
class TurnState:
    """What the turn is doing, derived from the agent's events (L3)."""

    phase: str = "idle"
    tool: str | None = None
    since: float = 0.0
    turn_started: float = 0.0
    last_chunk: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    streamed_chars: int = 0
    retry: str | None = None

    def apply(self, event: ev.AgentEvent, now: float) -> None:
        """Move the state along for one event."""
        if isinstance(event, ev.TurnStarted):
            self.phase, self.turn_started, self.since = "waiting", now, now
            self.last_chunk, self.streamed_chars, self.tool = now, 0, None
        elif isinstance(event, ev.RequestStarted):
            self._enter("waiting", now)
            self.last_chunk = now
        elif isinstance(event, ev.ReasoningDelta):
            self._chunk("thinking", now, len(event.text))
        elif isinstance(event, ev.TextDelta | ev.ToolCallDelta):
            self._chunk("writing", now, len(getattr(event, "text", "")))
        elif isinstance(event, ev.ToolStarted):
            self._enter("tool", now)
            self.tool = event.name
        elif isinstance(event, ev.ToolApprovalAnswered):
            self.since = now  # the tool's own time starts after the user's answer
        elif isinstance(event, ev.ToolFinished):
            self._enter("waiting", now)
            self.last_chunk = now
        elif isinstance(event, ev.Retrying):
            self._enter("retrying", now)
            self.retry = f"retrying ({event.attempt}/{event.max_attempts}) in {event.delay:.0f} s"
        elif isinstance(event, ev.UsageUpdated):
            self.input_tokens = event.total_input_tokens
            self.output_tokens = event.total_output_tokens
        elif isinstance(event, ev.CompactionStarted):
            self._enter("compacting", now)
        elif isinstance(event, ev.CompactionProgress):
            self.last_chunk = now
        elif isinstance(event, ev.CompactionFinished):
            self._enter("waiting", now)
        elif isinstance(event, ev.TurnFinished):
            self._enter("idle", now)

    def _enter(self, phase: str, now: float) -> None:
        if phase != self.phase:
            self.phase, self.since = phase, now
        if phase != "tool":
            self.tool = None

    def _chunk(self, phase: str, now: float, chars: int) -> None:
        self._enter(phase, now)
        self.last_chunk = now
        self.streamed_chars += chars

    def describe(self, now: float) -> str:
        """One line for the status panel: the phase, how long, and silence when it matters."""
        elapsed = format_duration(now - self.turn_started)
        if self.phase == "idle":
            return "idle"
        if self.phase == "tool":
            return f"running tool {self.tool} ({format_duration(now - self.since)})"
        if self.phase == "retrying":
            return self.retry or "retrying"
        if self.phase == "compacting":
            return f"compacting ({format_duration(now - self.since)})"
        silent = now - self.last_chunk
        if silent >= SILENCE_AFTER:
            return f"stream silent for {format_duration(silent)}"
        label = {
            "waiting": "waiting for the first token",
            "thinking": "thinking",
            "writing": "writing",
        }.get(self.phase, self.phase)
        return f"{label} · {elapsed}"


_VERSION_RE = re.compile(r'VERSION\s*=\s*"([^"]+)"')
_PACKAGES = ("agent", "storage", "hermes_tui")


class CodeSkewGuard:
    """Notices when the installed code changes under a running process (an upgrade) (L4)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or Path(__file__).resolve().parents[1]
        from agent.version import VERSION

        self.version = VERSION
        self.fingerprint = self.compute_fingerprint()

    def compute_fingerprint(self) -> str:
        """A digest of every source file's path, size and mtime in our packages."""
        import hashlib  # here, not at the top: the app imports this module before its first frame

        digest = hashlib.sha256()
        for package in _PACKAGES:
            base = self.root / package
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*.py")):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()

    def installed_version(self) -> str:
        """The version in the version file on disk now (not the one imported at start)."""
        try:
            text = (self.root / "agent" / "version.py").read_text(encoding="utf-8")
        except OSError:
            return "unknown"
        match = _VERSION_RE.search(text)
        return match.group(1) if match else "unknown"

    def skew_message(self) -> str | None:
        """The refusal sentence when the code changed since start, else None."""
        if self.compute_fingerprint() == self.fingerprint:
            return None
        return upgraded_message(self.version, self.installed_version())


def upgraded_message(old: str, new: str) -> str:
    """The sentence shown when the code changed under a running app."""
    if old == new:
        return f"hermes-tui's code ({old}) changed on disk while running: restart to continue."
    return f"hermes-tui was upgraded from {old} to {new} while running: restart to continue."


def raised_in_own_code(exc: BaseException) -> bool:
    """True when an exception was raised from one of our own packages' frames."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    root = Path(__file__).resolve().parents[1]
    origin = Path(frames[-1].filename).resolve()
    return any(origin.is_relative_to(root / package) for package in _PACKAGES)
