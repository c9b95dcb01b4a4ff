"""Which panels the screen shows at which width, the same on a resize as at a fresh start.

Wide (>= 120 columns): sessions | transcript | status. Middle (>= 100): transcript | status.
Narrow: the transcript alone, the status folded into one line above the composer. f2 / f3
show or hide a panel at any width, until the next resize: a resize lays out exactly as a
fresh start at the new size does (U1, issue 17).

The sessions panel takes a fifth of the terminal, between 28 and 44 columns; ctrl+left /
ctrl+right in the panel narrow or widen it, and that width is remembered (ui_state.py) and
kept at every terminal width, within 20 columns and a quarter of the terminal (issue 29).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.widget import Widget

    from hermes_tui.ui_state import UIState
    from hermes_tui.widgets.sessions_panel import SessionsPanel

SESSIONS_MIN_WIDTH = 120
"""From this width the sessions panel shows on its own."""
SESSIONS_WIDTH = (28, 44)
"""The sessions panel's width unless the user chose one: a fifth of the terminal, in these."""
SESSIONS_SHARE = 5
SESSIONS_NARROWEST = 20
"""The least a user can narrow the sessions panel to (a title still reads)."""
SESSIONS_STEP = 4
"""Columns one ctrl+left / ctrl+right takes from or gives to the sessions panel."""
STATUS_MIN_WIDTH = 100
"""From this width the status panel shows on its own (26 columns); below, the status line."""


@dataclass
class PanelChoice:
    """The user's f2 / f3 choices since the last resize (None: the width decides)."""

    shown: dict[str, bool] = field(default_factory=dict)


def panels_for(width: int, choice: PanelChoice | None = None) -> dict[str, bool]:
    """{"sessions": shown, "status": shown} at `width`, the user's choices applied."""
    panels = {"sessions": width >= SESSIONS_MIN_WIDTH, "status": width >= STATUS_MIN_WIDTH}
    if choice is not None:
        panels.update(choice.shown)
    return panels


class LayoutHost(Protocol):
    """What the layout uses of the app: its size and the panels it shows or hides."""

    @property
    def size(self) -> Size:
        """The terminal's size."""
        ...

    @property
    def sessions_panel(self) -> SessionsPanel:
        """The sessions panel."""
        ...

    @property
    def status_panel(self) -> Widget:
        """The status panel."""
        ...

    @property
    def status_line(self) -> Widget:
        """The status line (shown while the status panel is hidden)."""
        ...


def sessions_width(width: int, chosen: int | None = None) -> int:
    """The sessions panel's columns in a `width`-column terminal: the user's `chosen` width
    within bounds, else a share of the terminal."""
    narrowest, widest = SESSIONS_WIDTH
    if chosen is None:
        return min(max(width // SESSIONS_SHARE, narrowest), widest)
    # Up to a quarter of the terminal, never less than the default's least: the transcript
    # keeps the most of the screen (the status panel takes its share too), and a width
    # chosen at 200 columns still fits at 80.
    return min(max(chosen, SESSIONS_NARROWEST), max(width // 4, narrowest))


class ScreenLayout:
    """Shows and hides the side panels and the status line as the width and the user say."""

    def __init__(self, app: LayoutHost, state: UIState) -> None:
        self.app = app
        self.state = state
        self.choice = PanelChoice()
        self._width: int | None = None

    def fit(self, width: int) -> None:
        """Lay the screen out for `width` columns (a new width forgets the f2 / f3 choices)."""
        if width != self._width:
            self.choice = PanelChoice()
            self._width = width
        self._apply()

    def show(self, name: str, shown: bool) -> None:
        """Show or hide panel `name` (sessions | status) until the next resize."""
        self.choice.shown[name] = shown
        self._apply()

    def resize_sessions(self, direction: int) -> None:
        """Widen (1) or narrow (-1) the sessions panel by a step, and remember its width."""
        width = self._width or self.app.size.width
        now = sessions_width(width, self.state.sessions_width)
        chosen = sessions_width(width, now + direction * SESSIONS_STEP)
        if chosen != now or self.state.sessions_width is None:
            self.state.sessions_width = chosen
        self._apply()

    def _apply(self) -> None:
        app = self.app
        width = self._width or app.size.width
        panels = panels_for(width, self.choice)
        app.sessions_panel.set_width(sessions_width(width, self.state.sessions_width))
        app.sessions_panel.display = panels["sessions"]
        app.status_panel.display = panels["status"]
        # With the panel hidden, the turn, the queue and the context stay in sight.
        app.status_line.display = not panels["status"]
