"""The model's todo list (N2): its items, the rules a new list keeps, and how it is kept.

The model writes the whole list on each `todo_write` call; the agent keeps the last one in
the session's metadata (so a resume shows it without reading tool rows) and puts it after a
compaction's summary word for word (so the model never loses it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agent import events as ev
from agent.kinds import TodoStatus

if TYPE_CHECKING:
    from agent.session_state import SessionState

TODOS_KEY = "todos"
"""The session metadata key that keeps the model's current todo list (N2)."""

MAX_ITEMS = 50
"""A list longer than this is refused: a plan of more steps is a plan too coarse to track."""
MAX_TEXT = 300
"""An item's text is at most this many characters (one step, not a document)."""

PENDING, IN_PROGRESS, DONE = (str(status) for status in TodoStatus)
STATUSES = (PENDING, IN_PROGRESS, DONE)
_ALIASES = {"completed": DONE, "complete": DONE, "in progress": IN_PROGRESS, "todo": PENDING}
"""Other names models trained on other agents use for the same statuses."""


class TodoError(ValueError):
    """A list the tool refuses; the message is one sentence meant for the model."""


@dataclass(frozen=True)
class TodoItem:
    """One step: what it is and how far it is (pending, in_progress, done)."""

    text: str
    status: str


@dataclass(frozen=True)
class TodoList:
    """The model's whole list, in its order; empty when it has none."""

    items: tuple[TodoItem, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> TodoList:
        """The list a `todo_write` call sent, checked; raises TodoError saying what is wrong."""
        if not isinstance(raw, list):
            raise TodoError("todos must be an array of {text, status} items.")
        if len(raw) > MAX_ITEMS:
            raise TodoError(
                f"The list has {len(raw)} items; at most {MAX_ITEMS} are allowed, so merge steps."
            )
        items = tuple(_item(number, entry) for number, entry in enumerate(raw, 1))
        running = [n for n, item in enumerate(items, 1) if item.status == IN_PROGRESS]
        if len(running) > 1:
            numbers = ", ".join(map(str, running))
            raise TodoError(
                f"Items {numbers} are all in_progress; at most one item may be in_progress "
                "at a time, so mark the others pending or done."
            )
        return cls(items)

    @classmethod
    def stored(cls, raw: Any) -> TodoList:
        """The list kept in a session's metadata; what does not read as one is left out
        (a stored row comes from outside: it never breaks a resume)."""
        try:
            return cls.parse(raw)
        except TodoError:
            pass
        if not isinstance(raw, list):
            return cls()
        items: list[TodoItem] = []
        for number, entry in enumerate(raw[:MAX_ITEMS], 1):
            try:
                items.append(_item(number, entry))
            except TodoError:
                continue
        return cls(tuple(items))

    def to_json(self) -> list[dict[str, str]]:
        """The list as the metadata and `run --json` hold it."""
        return [{"text": item.text, "status": item.status} for item in self.items]

    @property
    def done(self) -> int:
        """How many items are done."""
        return sum(item.status == DONE for item in self.items)

    @property
    def current(self) -> TodoItem | None:
        """The item in progress, if any."""
        return next((item for item in self.items if item.status == IN_PROGRESS), None)

    @property
    def progress(self) -> str:
        """`2/5`: done of all."""
        return f"{self.done}/{len(self.items)}"

    def report(self) -> str:
        """What the model reads back: the list as kept, one line an item."""
        if not self.items:
            return "The todo list is now empty."
        lines = [f"Todo list updated ({self.progress} done):", *_lines(self.items)]
        return "\n".join(lines)

    def carried(self) -> str:
        """The list for a compacted context, word for word ("" when there is none)."""
        if not self.items:
            return ""
        return "\n".join(
            ["[Your todo list, as you last wrote it with todo_write]", *_lines(self.items)]
        )


def _lines(items: Iterable[TodoItem]) -> list[str]:
    return [f"{number}. [{item.status}] {item.text}" for number, item in enumerate(items, 1)]


def _item(number: int, entry: Any) -> TodoItem:
    """Item `number` of a sent list, checked."""
    if not isinstance(entry, dict):
        raise TodoError(f"Item {number} must be an object with text and status.")
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TodoError(f"Item {number} needs a non-empty text.")
    # An item is one line wherever it is shown.
    text = " ".join(text.split())
    if len(text) > MAX_TEXT:
        raise TodoError(
            f"Item {number} is {len(text)} characters long; keep each item under {MAX_TEXT}."
        )
    status = entry.get("status", PENDING)
    word = status.strip().lower().replace("-", "_") if isinstance(status, str) else ""
    word = _ALIASES.get(word.replace("_", " "), word)
    if word not in STATUSES:
        raise TodoError(
            f"Item {number} has status {status!r}; use one of pending, in_progress, done."
        )
    return TodoItem(text, word)


class TodoHost(Protocol):
    """What keeping the list uses of the agent: its session, its metadata and its sink."""

    state: SessionState
    sink: ev.Sink

    @property
    def session_id(self) -> str | None: ...
    def keep_metadata(self, key: str, value: Any) -> None: ...


def keep_todos(host: TodoHost, todos: TodoList) -> None:
    """Keep the list a `todo_write` call sent with `host`'s session, and tell its sink."""
    host.state.todos = todos
    if host.session_id is not None:
        host.keep_metadata(TODOS_KEY, todos.to_json() or None)
    host.sink(ev.TodosChanged(tuple(todos.to_json()), todos.done, len(todos.items)))
