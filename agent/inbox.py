"""Steer acceptance per turn: generations, and the seal-and-drain every terminal exit takes (T3)."""

from __future__ import annotations

import threading


class Inbox:
    """Holds steers accepted into the running turn until a safe boundary delivers them.

    `steer()` and `seal_and_drain()` take the same lock, so a steer either lands before the
    seal (and comes back as the turn's pending steer if it was not delivered) or is refused
    after it (and the caller queues it). Nothing is lost and nothing is delivered twice.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._generation = 0
        self._pending: list[str] = []

    @property
    def generation(self) -> int:
        """The number of the latest turn's acceptance generation."""
        return self._generation

    @property
    def is_open(self) -> bool:
        """True while a turn accepts steers."""
        return self._open

    def open_generation(self) -> int:
        """Start accepting steers for a new turn; returns the generation number."""
        with self._lock:
            self._generation += 1
            self._open = True
            self._pending = []
            return self._generation

    def steer(self, text: str) -> bool:
        """Accept `text` into the running turn; False when no turn accepts it (caller queues)."""
        with self._lock:
            if not self._open:
                return False
            self._pending.append(text)
            return True

    def take(self) -> list[str]:
        """Remove and return the steers waiting for delivery (at a safe boundary)."""
        with self._lock:
            items, self._pending = self._pending, []
            return items

    def seal_and_drain(self) -> str | None:
        """Close the generation and return undelivered steers joined, or None (T3)."""
        with self._lock:
            self._open = False
            items, self._pending = self._pending, []
        return "\n\n".join(items) if items else None
