"""One router for the agent's events: each goes to the transcript, the status presenter and
the sessions panel, in that order, by one lookup of its type."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from agent import events as ev

Handler = Callable[[Any], Any]
"""Handles one event; an async handler returns its coroutine, which the router awaits."""


class Routed(Protocol):
    """Something that follows some of the agent's events."""

    def routes(self) -> Iterable[tuple[type, Handler]]:
        """(event type, handler) for every event it follows."""
        ...


class EventRouter:
    """Sends each event to the handlers its type is routed to, in the consumers' order."""

    def __init__(self, *consumers: Routed, after: Callable[[Sequence[Any]], None]) -> None:
        """`after` runs once per batch, when every event of it has been handled."""
        self._table: dict[type, list[Handler]] = {}
        for consumer in consumers:
            self.join(consumer)
        self._after = after

    def join(self, consumer: Routed) -> None:
        """Route events to `consumer` too, after the handlers already routed."""
        for kind, handler in consumer.routes():
            self._table.setdefault(kind, []).append(handler)

    async def apply(self, events: Sequence[ev.AgentEvent]) -> None:
        """Handle one batch of events, in emission order."""
        table = self._table
        for event in events:
            for handler in table.get(type(event), ()):
                result = handler(event)
                if result is not None:
                    await result
        if events:
            self._after(events)
