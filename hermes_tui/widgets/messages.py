"""Transcript rows: the user's message, the assistant's answer, errors and notices."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


class UserMessage(Static):
    """What the user sent, shown verbatim (never parsed as markup)."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text))
        self.text = text


class ErrorBlock(Static):
    """A turn or app error with the text that says what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(Content(message))
        self.message = message


class NoticeLine(Static):
    """A one-line notice (retries, command feedback); `level` picks the colour."""

    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__(Content(text), classes=f"-{level}")
        self.text = text


def __getattr__(name: str):
    # AnswerBlock lives in its own module so that Markdown (a heavy import) loads on the
    # first answer, not on the path to the first frame; this keeps the old import working.
    if name == "AnswerBlock":
        from hermes_tui.widgets.answer import AnswerBlock

        return AnswerBlock
    raise AttributeError(name)
