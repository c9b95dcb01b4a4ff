"""Transcript rows: the user's message, the assistant's answer, errors and notices."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Markdown, Static


class UserMessage(Static):
    """What the user sent, shown verbatim (never parsed as markup)."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text))
        self.text = text


class AnswerBlock(Markdown):
    """The assistant's visible answer, streamed then finalised as Markdown."""


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
