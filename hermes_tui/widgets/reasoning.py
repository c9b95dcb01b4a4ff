"""The reasoning block: dim, live while streaming, folded once the answer starts (R1)."""

from __future__ import annotations

from textual.content import Content

from hermes_tui.safe_text import safe_text
from hermes_tui.widgets.foldable import Foldable


class ReasoningBlock(Foldable):
    """Streamed reasoning for display only: it is never stored, so resume shows none."""

    def __init__(self) -> None:
        super().__init__(expanded=True)
        self._parts: list[str] = []
        self.live = True

    @property
    def text(self) -> str:
        """The reasoning received so far."""
        return "".join(self._parts)

    def append(self, text: str) -> None:
        """Add a streamed piece (called at most once a frame by the bridge)."""
        self._parts.append(safe_text(text))
        self.body.update(Content(self.text.strip()))

    def finish(self) -> None:
        """The answer started (or the message ended): stop being live and fold."""
        if not self.live:
            return
        self.live = False
        self.expanded = False
        self._refresh_fold()

    def header_content(self) -> Content:
        arrow = "▾" if self.expanded else "▸"
        if self.live:
            return Content.from_markup(f"{arrow} [i]thinking…[/]")
        words = len(self.text.split())
        return Content.from_markup(f"{arrow} [i]reasoning[/] [dim]· {words} words[/]")
