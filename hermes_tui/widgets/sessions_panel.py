"""The sessions panel: stored sessions newest first; selecting one resumes it."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import PurePath
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.content_match import same_content
from hermes_tui.durations import format_duration
from hermes_tui.probes import cursor_blinks
from hermes_tui.safe_text import safe_line, safe_name


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


ROW_WIDTH = 25
"""A row's cells in the panel at its narrowest default (28 columns, less ROW_CHROME)."""
ROW_CHROME = 3
"""Columns of the panel no row can use: its border, the list's left padding, and the
scrollbar's gutter (kept whether or not a scrollbar shows, so a row is as wide in every state)."""
MARK = 2
"""The `● ` (current session) or blank in front of the title; the details line is indented
as far."""


def short_model(model: str, room: int) -> str:
    """A model name in `room` columns: a path (a llama.cpp `.gguf`) by its file name, then cut
    with `…`, so a long name never wraps the row onto a third line."""
    # Split the raw name: the `\u200b` a hidden character shows as holds no path part.
    name = safe_name(re.split(r"[/\\]", model.rstrip("/\\"))[-1] or model)
    return _cut(name, room)


def _cut(text: str, room: int) -> str:
    """`text` in `room` cells, its end cut with `…`."""
    if len(text) > room:
        return text[: max(1, room - 1)] + "…"
    return text


def _title(row: Mapping[str, Any], room: int = ROW_WIDTH - MARK) -> str:
    """A stored session's title on one row, cut to `room`, every hidden character shown
    (a newline too: a title cannot pose as another session's)."""
    return _cut(safe_name(str(row.get("title") or "untitled")), room)


def folder_name(path: str, room: int = 16) -> str:
    """A workspace as the panel shows it: its last folder name, cut to `room`."""
    return _cut(safe_name(PurePath(path).name or path), room)


LINEAGE = {"fork": "fork of", "rewind": "rewound from"}
"""How a session made from another says where it came from (a fork, or a rewind's later
messages); its title is marked with ↳."""


def session_label(
    session: Mapping[str, Any],
    *,
    current: bool,
    now: float,
    working_for: float | None = None,
    elsewhere: bool = False,
    parent: str | None = None,
    width: int = ROW_WIDTH,
) -> Content:
    """Two lines of `width` cells: a marker and the title (cut to one line), then relative
    time and model; a session from another workspace names its folder in place of the model
    (`in name`).

    A session with a turn running shows `working, 12 s` in place of its relative time (L1).
    A fork or a rewound branch is marked, and says which session it came from (`parent`).
    """
    room = max(width - MARK, 4)
    title = _title(session, room)
    lineage = LINEAGE.get(str(session.get("branch_kind") or ""), "")
    if lineage:
        title = "↳ " + _title(session, room - 2)
    when = relative_time(
        session.get("last_activity_at") or session.get("updated_at") or session.get("created_at"),
        now,
    )
    left = room - (len(when) + len(" · ") if when else 0)
    model = short_model(str(session.get("model") or ""), left)
    if elsewhere and session.get("workspace"):
        model = f"in {folder_name(str(session['workspace']), max(left - 3, 1))}"
    mark = ("● ", "$accent bold") if current else "  "
    if working_for is not None:
        # The model gives way: the line is as narrow as the panel.
        working = _cut(f"working, {format_duration(working_for)}", room)
        return Content.assemble(
            mark, (title, "bold" if current else ""), "\n  ", (working, "$warning")
        )
    origin = (
        _cut(f"{lineage} {_title({'title': parent}, room)}", room) if lineage and parent else ""
    )
    details = " · ".join(part for part in (origin or when, model if not origin else "") if part)
    return Content.assemble(mark, (title, "bold" if current else ""), "\n  ", (details, "dim"))


OLDER_ID = "older-sessions"
"""The last row's option id while the store holds more sessions than the list has loaded."""


def older_label(count: int, width: int = ROW_WIDTH) -> Content:
    """The last row while sessions are left out: how many, and that scrolling to it loads them."""
    room = max(width - MARK, 4)
    noun = "session" if count == 1 else "sessions"
    return Content.assemble(
        "  ",
        (_cut(f"{count} older {noun}", room), "bold"),
        "\n  ",
        (_cut("load as you scroll here", room), "dim"),
    )


SNIPPET_LINES = 2


def _highlight(line: str) -> Content:
    """One snippet line, the matched words (in [ ]) highlighted."""
    parts = re.split(r"(\[[^\[\]]*\])", line)
    return Content.assemble(
        *((piece, "bold $accent" if index % 2 else "dim") for index, piece in enumerate(parts))
    )


def _snippet(text: str, room: int) -> Content:
    """A search snippet wrapped to `room` under the title, at most SNIPPET_LINES lines."""
    lines = textwrap.wrap(" ".join(safe_line(text).split()), room) or [""]
    if len(lines) > SNIPPET_LINES:
        lines = lines[:SNIPPET_LINES]
        lines[-1] = lines[-1][: room - 1] + "…"
    return Content("\n").join(Content.assemble("  ", _highlight(line)) for line in lines)


def hit_label(hit: Mapping[str, Any], *, current: bool, width: int = ROW_WIDTH) -> Content:
    """A search hit in `width` cells: the session's title, then the matching snippet."""
    mark = ("● ", "$accent bold") if current else "  "
    room = max(width - MARK, 4)
    title = _title(hit, room)
    return Content.assemble(mark, (title, "bold"), "\n", _snippet(hit.get("snippet") or "", room))


class SessionsPanel(Vertical):
    """Lists sessions; Enter or a click on one posts `SessionsPanel.Selected`.

    A search box (hidden until asked for, or until you type in the list) searches every
    session's messages; picking a hit resumes its session; escape clears the search.
    """

    BINDINGS = [
        Binding("escape", "clear_search", "clear search", show=False),
        # Modified arrows: a printable key in the list starts a search.
        Binding("ctrl+left", "resize(-1)", "narrow panel", id="sessions.narrower"),
        Binding("ctrl+right", "resize(1)", "widen panel", id="sessions.wider"),
    ]

    class ResizeAsked(Message):
        """The user asked for a narrower (-1) or wider (1) panel; the app's layout decides."""

        def __init__(self, direction: int) -> None:
            super().__init__()
            self.direction = direction

    class Selected(Message):
        """The user picked a session to resume."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class OlderAsked(Message):
        """The user reached the list's end while older sessions are left out: load more."""

    class Search(Message):
        """The search text changed to `query` (never empty): the app runs the search."""

        def __init__(self, query: str) -> None:
            super().__init__()
            self.query = query

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sessions: Sequence[Mapping[str, Any]] = []
        self.older = 0
        """How many stored sessions the list leaves out (older than its last)."""
        self._older_asked = False
        self.current_id: str | None = None
        self.working: tuple[str, float] | None = None
        self._now = 0.0
        self.workspace: str | None = None
        """The app's workspace: its sessions come first, others name their folder."""
        self.hits: Sequence[Mapping[str, Any]] = []
        self.search_placeholder = "search messages"
        """The search box's hint (the app adds the key that opens it)."""
        self._search_box: Input | None = None
        self._results: OptionList | None = None
        self._list: OptionList | None = None
        self.row_width = ROW_WIDTH
        """The cells a row's label takes (set_width sets it from the panel's width)."""

    def compose(self) -> ComposeResult:
        # The search box and its results list are mounted the first time a search opens:
        # most starts never search, and they are two widgets fewer before the first frame.
        # The list itself is mounted when the first sessions arrive (the database opens
        # after the first frame), or when the user focuses it before that.
        yield Static("Sessions", classes="panel-title")

    def set_width(self, columns: int) -> None:
        """Make the panel `columns` wide, every label cut to the new width."""
        row_width = columns - ROW_CHROME
        if self.styles.width is not None and self.styles.width.cells == columns:
            return
        self.styles.width = columns
        self.row_width = row_width
        if self._list is not None and self.sessions:
            self.show(self.sessions, self.current_id, self._now, older=self.older)
        if self.hits and self.searching:
            self._show_hit_options()

    def action_resize(self, direction: int) -> None:
        """ctrl+left / ctrl+right: ask for a narrower or wider panel."""
        self.post_message(self.ResizeAsked(direction))

    @property
    def search_input(self) -> Input:
        """The search box (open_search mounts it)."""
        assert self._search_box is not None, "open_search() mounts the search box"
        return self._search_box

    @property
    def results(self) -> OptionList:
        """The search hits list (open_search mounts it)."""
        assert self._results is not None, "open_search() mounts the results list"
        return self._results

    @property
    def searching(self) -> bool:
        """True while the search box is open."""
        return self._search_box is not None and self._search_box.display

    async def open_search(self, text: str | None = None) -> None:
        """Show the search box and focus it (`text` replaces what is typed there)."""
        if self._search_box is None:
            _ = self.option_list  # mounts the list first, so the hits list stays below it
            self._search_box = Input(placeholder=self.search_placeholder, id="session-search")
            self._search_box.cursor_blink = cursor_blinks(self.app)
            self._results = OptionList(id="search-results")
            await self.mount(self._search_box, after=0)
            await self.mount(self._results)
        box = self._search_box
        box.display = True
        if text is not None:
            box.value = text
            box.cursor_position = len(text)
        box.focus()

    def action_clear_search(self) -> None:
        """Close the search: the sessions list again."""
        box = self.search_input
        box.value = ""
        box.display = False
        self.hits = []
        self.results.clear_options()
        self.results.display = False
        self.option_list.display = True
        self.option_list.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Escape clears an open search; otherwise it goes on to the app (stop the turn).
        if action == "clear_search":
            return self.searching
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        query = event.value.strip()
        if query:
            self.post_message(self.Search(query))
            return
        self.hits = []
        self.results.clear_options()
        self.results.display = False
        self.option_list.display = True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.hits:
            self.results.highlighted = 0
            self.results.focus()

    async def on_key(self, event: events.Key) -> None:
        if event.key == "down" and self.searching and self.search_input.has_focus and self.hits:
            event.stop()
            self.results.highlighted = 0
            self.results.focus()
        elif self._list is not None and self._list.has_focus and event.is_printable:
            if not event.character:
                return
            # Typing in the list starts a search with what was typed.
            event.stop()
            await self.open_search(event.character)

    def show_hits(
        self, query: str, hits: Sequence[Mapping[str, Any]], error: str | None = None
    ) -> None:
        """Show the hits for `query`; an answer for an older query is dropped."""
        if not self.searching or query != self.search_input.value.strip():
            return
        self.hits = hits
        results = self.results
        results.clear_options()
        if error is not None:
            results.add_option(Option(Content.styled(safe_line(error), "$error"), disabled=True))
        elif not hits:
            results.add_option(Option(Content.styled("  no matches", "dim"), disabled=True))
        else:
            self._show_hit_options()
        self.option_list.display = False
        results.display = True

    def _show_hit_options(self) -> None:
        """The hits as options, cut to the panel's width, the first highlighted."""
        results = self.results
        results.clear_options()
        results.add_options(
            Option(
                hit_label(hit, current=hit["session_id"] == self.current_id, width=self.row_width)
            )
            for hit in self.hits
        )
        results.highlighted = 0

    @property
    def option_list(self) -> OptionList:
        """The list widget (focus target), mounted on first use."""
        if self._list is None:
            self._list = OptionList(id="session-list")
            self.mount(self._list)
            # A wheel or a scrollbar drag to the end loads more, as the highlight reaching it does.
            self.watch(self._list, "scroll_y", self._scrolled, init=False)
        return self._list

    def _scrolled(self, scroll_y: float) -> None:
        option_list = self.option_list
        if option_list.max_scroll_y > 0 and scroll_y >= option_list.max_scroll_y:
            self._ask_older()

    def _ask_older(self) -> None:
        """Ask once per list shown for the older sessions, if any are left out."""
        if self.older and not self._older_asked:
            self._older_asked = True
            self.post_message(self.OlderAsked())

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list is self._list and event.option.id == OLDER_ID:
            self._ask_older()

    def show(
        self,
        sessions: Sequence[Mapping[str, Any]],
        current_id: str | None,
        now: float,
        *,
        older: int = 0,
    ) -> None:
        """Replace the list, keeping the highlight on the same session where possible.

        This workspace's sessions come first, newest first, then every other one; `older`
        stored sessions left out are one last row, which loads them when reached.
        """
        loaded_before = len(self.sessions)
        sessions = sorted(sessions, key=lambda s: self._elsewhere(s))  # stable: keeps recency
        self.sessions = sessions
        self.current_id = current_id
        self._now = now
        self.older = older
        self._older_asked = False
        option_list = self.option_list
        highlighted = option_list.highlighted_option
        keep = highlighted.id if highlighted is not None else current_id
        option_list.clear_options()
        option_list.add_options(Option(self._label(s), id=s["id"]) for s in sessions)
        if older:
            option_list.add_option(Option(older_label(older, self.row_width), id=OLDER_ID))
        if not sessions:
            return
        ids = [s["id"] for s in sessions]
        if keep == OLDER_ID:
            # The highlight that asked for more goes on to the first session it loaded.
            option_list.highlighted = min(loaded_before, len(ids) - 1)
        else:
            option_list.highlighted = ids.index(keep) if keep in ids else 0

    def _label(self, session: Mapping[str, Any]) -> Content:
        working_for = None
        if self.working is not None and self.working[0] == session["id"]:
            working_for = self.working[1]
        parent = next((s for s in self.sessions if s["id"] == session.get("parent_id")), None)
        return session_label(
            session,
            current=session["id"] == self.current_id,
            now=self._now,
            working_for=working_for,
            elsewhere=self._elsewhere(session),
            parent=(parent or {}).get("title") if session.get("parent_id") else None,
            width=self.row_width,
        )

    def _elsewhere(self, session: Mapping[str, Any]) -> bool:
        """True for a session stored with another workspace than the app's."""
        stored = session.get("workspace")
        return bool(self.workspace and stored and stored != self.workspace)

    def set_working(self, session_id: str | None, seconds: float | None) -> None:
        """Show `working, N s` on the busy session (None: no turn runs); cheap once a second."""
        before = self.working[0] if self.working is not None else None
        self.working = (session_id, seconds) if session_id and seconds is not None else None
        for changed in {name for name in (before, session_id) if name is not None}:
            session = next((s for s in self.sessions if s["id"] == changed), None)
            if session is None:
                continue
            label = self._label(session)
            # The tick and every batch that marks the busy session ask: the list (every row
            # re-rendered) is redrawn only when the busy row's words changed.
            option_list = self.option_list
            if not same_content(option_list.get_option(changed).prompt, label):
                option_list.replace_option_prompt(changed, label)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_list is self._results:
            if event.option_index < len(self.hits):
                self.post_message(self.Selected(self.hits[event.option_index]["session_id"]))
        elif event.option.id == OLDER_ID:
            self._older_asked = False
            self._ask_older()
        elif event.option.id is not None:
            self.post_message(self.Selected(event.option.id))
