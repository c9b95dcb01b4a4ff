"""Credential pools (K1): several keys for one provider, stable entry ids, cooldowns.

A failure is charged to the entry that issued the request (by its id), even when the pool has
moved on meanwhile; a 401 or 429 rotates to the next usable entry; rotating a one-entry pool is
reported as a failure (no recovery), never as a recovery.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.config import ProviderConfig

AUTH_COOLDOWN_SECONDS = 3600.0
RATE_LIMIT_COOLDOWN_SECONDS = 60.0


@dataclass
class Credential:
    """One pool entry. `id` is stable (never the key) and safe to log."""

    id: str
    key: str
    cooldown_until: float = 0.0
    failures: int = 0
    last_status: int | None = None

    def __repr__(self) -> str:  # never print the key (K3)
        return f"Credential(id={self.id!r}, failures={self.failures})"


class CredentialPool:
    """The keys of one provider, with a cursor and per-entry cooldowns (thread-safe)."""

    def __init__(
        self, entries: list[Credential], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not entries:
            raise ValueError("a credential pool needs at least one entry")
        self._entries = entries
        self._cursor = 0
        self._clock = clock
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: ProviderConfig, fallback: str | None = None) -> CredentialPool:
        """Entries from `api_key`, `api_key_env` and `api_keys_env` (in that order)."""
        entries: list[Credential] = []
        if config.api_key:
            entries.append(Credential(f"{config.name}:inline", config.api_key))
        names = ([config.api_key_env] if config.api_key_env else []) + list(config.api_keys_env)
        for name in names:
            value = os.environ.get(name)
            if value and all(e.key != value for e in entries):
                entries.append(Credential(f"{config.name}:{name}", value))
        if not entries and fallback:
            entries.append(Credential(f"{config.name}:local", fallback))
        return cls(entries)

    @property
    def entries(self) -> list[Credential]:
        """The entries, in pool order."""
        return list(self._entries)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every key of the pool (for redaction)."""
        return tuple(e.key for e in self._entries)

    def _usable(self, entry: Credential, now: float) -> bool:
        return entry.cooldown_until <= now

    def current(self) -> Credential:
        """The entry to issue the next request with: the cursor's, or the next usable one."""
        with self._lock:
            now = self._clock()
            n = len(self._entries)
            for step in range(n):
                index = (self._cursor + step) % n
                if self._usable(self._entries[index], now):
                    self._cursor = index
                    return self._entries[index]
            # All cooling down: the one that recovers first.
            index = min(range(n), key=lambda i: self._entries[i].cooldown_until)
            self._cursor = index
            return self._entries[index]

    def get(self, entry_id: str) -> Credential | None:
        """The entry with this id."""
        return next((e for e in self._entries if e.id == entry_id), None)

    def report_failure(
        self, entry_id: str, status: int | None, retry_after: float | None = None
    ) -> bool:
        """Charge a failure to the entry that issued the request; rotate on 401/429.

        Returns True only when the pool now points at a different, usable entry (a real
        recovery). A one-entry pool, or one where every other entry cools down, returns False.
        """
        with self._lock:
            now = self._clock()
            entry = next((e for e in self._entries if e.id == entry_id), None)
            if entry is None:
                return False
            entry.failures += 1
            entry.last_status = status
            if status == 401 or status == 403:
                entry.cooldown_until = now + AUTH_COOLDOWN_SECONDS
            elif status == 429:
                entry.cooldown_until = now + (retry_after or RATE_LIMIT_COOLDOWN_SECONDS)
            else:
                return False
            n = len(self._entries)
            current = self._entries[self._cursor]
            if current is not entry and self._usable(current, now):
                return True  # the pool already moved on to a usable entry
            start = self._entries.index(entry)
            for step in range(1, n):
                index = (start + step) % n
                if self._usable(self._entries[index], now):
                    self._cursor = index
                    return True
            return False

    def report_success(self, entry_id: str) -> None:
        """A request issued by this entry succeeded."""
        with self._lock:
            entry = next((e for e in self._entries if e.id == entry_id), None)
            if entry is not None:
                entry.failures = 0
                entry.cooldown_until = 0.0
