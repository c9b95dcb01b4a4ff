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


def summary_body(text: str) -> str:
    """The summary without the header and footer lines the model needs and the user does not."""
    from agent.compaction import SUMMARY_FOOTER, SUMMARY_HEADER

    frame = (SUMMARY_HEADER, SUMMARY_FOOTER)
    lines = [line for line in text.strip().splitlines() if line.strip() not in frame]
    return "\n".join(lines).strip()


class SummaryBlock(Foldable):
    """A compaction summary: dim and folded; the messages it stands for stay above it."""

    def __init__(self, text: str) -> None:
        super().__init__(expanded=False)
        self.text = safe_text(summary_body(text))
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
