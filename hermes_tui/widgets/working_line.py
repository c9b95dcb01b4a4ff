"""The working spinner under the transcript while a turn runs: what it does, how long."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.widget import Widget

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
FRAMES_PER_SECOND = 8


class WorkingLine(Widget, can_focus=False):
    """Hidden while idle; `start()` shows `describe()` behind a spinner until `stop()`."""

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
        self.display = False
        self._describe: Callable[[], str] = str
        self._clock: Callable[[], float] = float
        self.stop_key = "esc"

    def start(self, describe: Callable[[], str], clock: Callable[[], float]) -> None:
        """Spin with `describe()` as the text; the frame follows `clock` (a still clock in
        tests keeps snapshots still)."""
        self._describe, self._clock = describe, clock
        self.display = True
        self.auto_refresh = 1 / FRAMES_PER_SECOND

    def stop(self) -> None:
        """The turn ended: hide, and stop repainting."""
        self.display = False
        self.auto_refresh = None

    @property
    def text(self) -> str:
        """The line as plain text (for tests and checks)."""
        return self.render().plain

    def render(self) -> Content:
        frame = FRAMES[int(self._clock() * FRAMES_PER_SECOND) % len(FRAMES)]
        return Content.assemble(
            (frame, "$accent"), " ", self._describe(), (f"  · {self.stop_key} stops", "dim")
        )
