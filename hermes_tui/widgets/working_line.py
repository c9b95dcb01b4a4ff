"""The working spinner under the transcript while a turn runs: what it does, how long.

Its row is always there, blank while idle: a line that appeared at Enter shrank the
transcript by a row, and that resize cost a second layout and a repaint of the whole view
before the user's bubble showed (with a long session open, most of Enter's time; Z2)."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.widget import Widget

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
FRAMES_PER_SECOND = 8


class WorkingLine(Widget, can_focus=False):
    """Blank while idle; `start()` shows `describe()` behind a spinner until `stop()`. The
    row never comes or goes, so the transcript above keeps its size (no layout at Enter)."""

    DEFAULT_CSS = """
    WorkingLine {
        height: 1;
        padding: 0 1;
        color: $text-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.running = False
        """True from `start()` to `stop()`: the spinner shows."""
        self._describe: Callable[[], str] = str
        self._clock: Callable[[], float] = float
        self.stop_key = "esc"

    def start(self, describe: Callable[[], str], clock: Callable[[], float]) -> None:
        """Spin with `describe()` as the text; the frame follows `clock` (a still clock in
        tests keeps snapshots still)."""
        self._describe, self._clock = describe, clock
        self.running = True
        self.auto_refresh = 1 / FRAMES_PER_SECOND
        self.refresh()

    def stop(self) -> None:
        """The turn ended: blank the row, and stop repainting."""
        self.running = False
        self.auto_refresh = None
        self.refresh()

    @property
    def text(self) -> str:
        """The line as plain text (for tests and checks)."""
        return self.render().plain

    def render(self) -> Content:
        if not self.running:
            return Content("")
        frame = FRAMES[int(self._clock() * FRAMES_PER_SECOND) % len(FRAMES)]
        return Content.assemble(
            (frame, "$accent"), " ", self._describe(), (f"  · {self.stop_key} stops", "dim")
        )
