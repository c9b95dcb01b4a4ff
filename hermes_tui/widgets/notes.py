"""Typed notes the agent wrote as messages: a compaction summary and the recovery note.

The model reads them as ordinary user or assistant text; the user did not type them and
the agent did not answer with them, so the transcript shows them as what they are.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_text
from hermes_tui.widgets.foldable import Foldable

RECOVERY_TEXT = "↻ continuing the interrupted turn (hermes-tui told the model it had stopped)"


class SummaryBlock(Foldable):
    """A compaction summary: dim and folded; the messages it stands for stay above it."""

    def __init__(self, text: str) -> None:
        """`text`: the summary's body, without the frame lines only the model needs."""
        super().__init__(expanded=False)
        self.text = safe_text(text)
        self.body.update(Content(self.text))

    def header_content(self) -> Content:
        arrow = "▾" if self.expanded else "▸"
        words = len(self.text.split())
        return Content.from_markup(
            f"{arrow} [i]summary of earlier conversation[/] [dim]· {words} words[/]"
        )


class RecoveryNote(Static):
    """The note that continued a turn after a crash (D4): typed by the agent, not the user."""

    def __init__(self) -> None:
        super().__init__(Content(RECOVERY_TEXT))
