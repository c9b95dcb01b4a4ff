"""Liveness: the activity clock and heartbeat (L1) and the code-skew guard (L4).

The stall watchdog (L2) and the turn state (L3) are the UI's: hermes_tui/status.py.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable
from pathlib import Path

HEARTBEAT_INTERVAL = 5.0


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
        self.clock = clock
        """Read on every use, so a test may swap it mid-run."""
        self._heartbeat = heartbeat
        self.interval = interval
        self.last = clock()
        self._stamped = float("-inf")

    def touch(self) -> None:
        """Record activity now; stamp the heartbeat when the last stamp is old enough."""
        now = self.clock()
        self.last = now
        if now - self._stamped >= self.interval and self._heartbeat is not None:
            self._stamped = now
            self._heartbeat(time.time())

    def idle_for(self) -> float:
        """Seconds since the last activity."""
        return self.clock() - self.last

    def reset(self) -> None:
        """Start a new turn: activity now, and the next touch stamps at once."""
        self.last = self.clock()
        self._stamped = float("-inf")


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
