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
        self._open = False  # pragma: no mutate (only ever read as a truth value: None reads alike)
        self._generation = 0
        self._pending: list[str] = []

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
            self._open = False  # pragma: no mutate (read as a truth value only)
            items, self._pending = self._pending, []
        return "\n\n".join(items) if items else None


class QueuedInput:
    """One line of input waiting for its turn; `origin` is queued | steer | redirect."""

    __slots__ = ("id", "origin", "text")

    def __init__(self, item_id: int, text: str, origin: str) -> None:
        self.id = item_id
        self.text = text
        self.origin = origin

    def __repr__(self) -> str:
        return f"QueuedInput({self.id}, {self.text!r}, {self.origin})"


class InputQueue:
    """The FIFO of input typed while the agent works: visible, editable, pausable (T1, T6).

    Refused or leftover steers are appended behind older items, so input keeps the order
    in which the user typed it. After a stop the queue pauses: items stay until the user
    sends something or resumes it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[QueuedInput] = []
        self._next_id = 1
        self.paused = False

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> list[QueuedInput]:
        """A snapshot of the waiting items, oldest first."""
        with self._lock:
            return list(self._items)

    def push(self, text: str, origin: str = "queued") -> QueuedInput:
        """Append `text` behind every older item."""
        with self._lock:
            item = QueuedInput(self._next_id, text, origin)
            self._next_id += 1
            self._items.append(item)
            return item

    def push_front(self, text: str, origin: str = "queued") -> QueuedInput:
        """Put `text` ahead of every item: it was sent before any of them was typed."""
        with self._lock:
            item = QueuedInput(self._next_id, text, origin)
            self._next_id += 1
            self._items.insert(0, item)
            return item

    def put_back(self, item: QueuedInput) -> None:
        """Return an item a turn could not take to the head of the queue, ahead of the rest."""
        with self._lock:
            self._items.insert(0, item)

    def remove(self, item_id: int) -> QueuedInput | None:
        """Take one item out (to delete it or to edit it in the composer)."""
        with self._lock:
            for index, item in enumerate(self._items):
                if item.id == item_id:
                    return self._items.pop(index)
            return None

    def pop_next(self) -> QueuedInput | None:
        """The oldest item, unless the queue is paused or empty."""
        with self._lock:
            if self.paused or not self._items:
                return None
            return self._items.pop(0)

    def pause(self) -> None:
        """Hold the items (after a stop) until `resume`."""
        self.paused = True

    def resume(self) -> None:
        """Let the items run again."""
        self.paused = False
