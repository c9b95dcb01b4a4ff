"""The app's services a controller may use, as small Protocols its own door is built from.

Each controller takes a Protocol of exactly the parts of the app it uses (its door), never
the whole HermesApp: these are the pieces of Textual's App some of those doors share, and
`started`, which a part that runs only after the start uses to reach the agent or the store.

A door's parameters keep Textual's names (callers pass them as keywords), which vulture
counts as unused: those lines say `noqa: V107`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.worker import Worker

    from agent.loop import Agent
    from storage.db import SessionDB

T = TypeVar("T")


class NotStarted(RuntimeError):
    """A part that exists only after the app's start (the agent, the store) was used before."""


def started(part: T | None, name: str) -> T:
    """`part` (the agent, the store), which the start after the first frame has set."""
    if part is None:
        raise NotStarted(f"the {name} is used before the app has started")
    return part


class HasStore(Protocol):
    """An app that opens the session store at its start."""

    @property
    def db(self) -> SessionDB | None:
        """The store, None before the start."""
        ...


def store_of(app: HasStore) -> SessionDB:
    """The app's session store, once it has started."""
    return started(app.db, "session store")


class HasAgent(Protocol):
    """An app that builds the agent at its start."""

    @property
    def agent(self) -> Agent | None:
        """The agent, None before the start."""
        ...


def agent_of(app: HasAgent) -> Agent:
    """The app's agent, once it has started."""
    return started(app.agent, "agent")


class RunsWorkers(Protocol):
    """Textual's workers: a coroutine (or a thread) the app runs and cancels."""

    def run_worker(
        self,
        work: Any,
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,  # noqa: V107
        start: bool = True,
        exclusive: bool = False,  # noqa: V107
        thread: bool = False,
    ) -> Worker[Any]:
        """Run `work` as a worker of the app."""
        ...


class ShowsScreens(Protocol):
    """Textual's screen stack: a screen (a dialog, a panel) shown over the app."""

    def push_screen(
        self,
        screen: Screen[Any],
        callback: Callable[[Any], None] | Callable[[Any], Awaitable[None]] | None = None,  # noqa: V107
    ) -> Awaitable[Any]:
        """Show `screen`; `callback` gets what it is dismissed with."""
        ...


class Notices(Protocol):
    """A one-line notice in the transcript."""

    async def notice(self, text: str, level: str = "info") -> None:
        """Show `text` as a notice of `level` (info | warning | error)."""
        ...
