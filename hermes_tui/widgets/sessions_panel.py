"""The sessions panel: stored sessions newest first; selecting one resumes it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


def _timestamp(value: Any) -> float | None:
    """Epoch seconds from a stored timestamp (a number or an ISO string)."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def relative_time(value: Any, now: float) -> str:
    """`just now`, `5m ago`, `3h ago`, `2d ago`."""
    stamp = _timestamp(value)
    if stamp is None:
        return ""
    seconds = max(0.0, now - stamp)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


TITLE_WIDTH = 22


def session_label(session: dict[str, Any], *, current: bool, now: float) -> Content:
    """Two lines: a marker and the title (cut to one line), then relative time and model."""
    title = " ".join((session.get("title") or "untitled").split())
    if len(title) > TITLE_WIDTH:
        title = title[: TITLE_WIDTH - 1] + "…"
    when = relative_time(
        session.get("last_activity_at") or session.get("updated_at") or session.get("created_at"),
        now,
    )
    model = session.get("model") or ""
    mark = ("● ", "$accent bold") if current else "  "
    details = " · ".join(part for part in (when, model) if part)
    return Content.assemble(mark, (title, "bold" if current else ""), "\n  ", (details, "dim"))


class SessionsPanel(Vertical):
    """Lists sessions; Enter or a click on one posts `SessionsPanel.Selected`."""

    class Selected(Message):
        """The user picked a session to resume."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sessions: list[dict[str, Any]] = []
        self.current_id: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("Sessions", classes="panel-title")
        yield OptionList(id="session-list")

    @property
    def option_list(self) -> OptionList:
        """The list widget (focus target)."""
        return self.query_one(OptionList)

    def show(self, sessions: list[dict[str, Any]], current_id: str | None, now: float) -> None:
        """Replace the list, keeping the highlight on the same session where possible."""
        self.sessions = sessions
        self.current_id = current_id
        option_list = self.option_list
        highlighted = option_list.highlighted_option
        keep = highlighted.id if highlighted is not None else current_id
        option_list.clear_options()
        option_list.add_options(
            Option(session_label(s, current=s["id"] == current_id, now=now), id=s["id"])
            for s in sessions
        )
        if not sessions:
            return
        ids = [s["id"] for s in sessions]
        option_list.highlighted = ids.index(keep) if keep in ids else 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Selected(event.option.id))
