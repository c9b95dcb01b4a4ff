"""Which panels the screen shows at which width, the same on a resize as at a fresh start.

Wide (>= 120 columns): sessions | transcript | status. Middle (>= 100): transcript | status.
Narrow: the transcript alone, the status folded into one line above the composer. f2 / f3
show or hide a panel at any width, until the next resize: a resize lays out exactly as a
fresh start at the new size does (U1, issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.widget import Widget

SESSIONS_MIN_WIDTH = 120
"""From this width the sessions panel shows on its own (it takes 28 columns)."""
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
    def sessions_panel(self) -> Widget:
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


class ScreenLayout:
    """Shows and hides the side panels and the status line as the width and the user say."""

    def __init__(self, app: LayoutHost) -> None:
        self.app = app
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

    def _apply(self) -> None:
        app = self.app
        panels = panels_for(self._width or app.size.width, self.choice)
        app.sessions_panel.display = panels["sessions"]
        app.status_panel.display = panels["status"]
        # With the panel hidden, the turn, the queue and the context stay in sight.
        app.status_line.display = not panels["status"]
