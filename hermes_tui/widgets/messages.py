"""Transcript rows: the user's message, the assistant's answer, errors and notices."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from hermes_tui.safe_text import safe_text


class UserMessage(Static):
    """What the user sent, shown verbatim (never parsed as markup; stored rows are outside
    text, so control characters show as ␛ and the like)."""

    def __init__(self, text: str) -> None:
        self.text = safe_text(text)
        super().__init__(Content(self.text))


class ErrorBlock(Static):
    """A turn or app error with the text that says what to do."""

    def __init__(self, message: str) -> None:
        self.message = safe_text(message)
        super().__init__(Content(self.message))


class NoticeLine(Static):
    """A one-line notice (retries, command feedback); `level` picks the colour."""

    def __init__(self, text: str, level: str = "info") -> None:
        self.text = safe_text(text)
        super().__init__(Content(self.text), classes=f"-{level}")


def __getattr__(name: str):
    # AnswerBlock lives in its own module so that Markdown (a heavy import) loads on the
    # first answer, not on the path to the first frame; this keeps the old import working.
    if name == "AnswerBlock":
        from hermes_tui.widgets.answer import AnswerBlock

        return AnswerBlock
    raise AttributeError(name)
