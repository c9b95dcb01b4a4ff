"""The transcript widget and what it reads stored sessions through."""

from hermes_tui.widgets.transcript.rows import Note, PlainRows, RowReader, UserView
from hermes_tui.widgets.transcript.view import Transcript
from hermes_tui.widgets.transcript.window import MAX_MOUNTED, PAGE_ROWS, HistorySource

__all__ = [
    "MAX_MOUNTED",
    "PAGE_ROWS",
    "HistorySource",
    "Note",
    "PlainRows",
    "RowReader",
    "Transcript",
    "UserView",
]
