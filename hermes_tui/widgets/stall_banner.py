"""The stall banner between transcript and composer: a silent turn while input waits (L2)."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class StallBanner(Static):
    """Hidden until the watchdog warns; `shown` counts episodes (one banner per episode)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.display = False
        self.shown = 0
        self.text = ""

    def warn(self, text: str) -> None:
        """Show the banner for a new stall episode."""
        self.shown += 1
        self.display = True
        self.update_text(text)

    def update_text(self, text: str) -> None:
        """Keep the idle time in the banner current while the episode lasts."""
        self.text = text
        self.update(Content.assemble(("⚠ ", "bold"), text))

    def clear(self) -> None:
        """Activity resumed (or the turn ended): hide the banner."""
        self.display = False
        self.text = ""
