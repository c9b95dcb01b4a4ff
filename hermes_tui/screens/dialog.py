"""The one box every dialog draws: bordered, on the surface colour, in the screen's middle."""

from __future__ import annotations

from typing import TypeVar

from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class DialogScreen(ModalScreen[ResultT]):
    """A modal screen whose box (a container with the `dialog` class) sits in the middle.

    A dialog's own rules say only how it differs (its widest, its tallest, a warning border).
    """

    # Its rules load with the first dialog, not with the first frame (Z2, `bench startup`).
    DEFAULT_CSS = """
    DialogScreen {
        align: center middle;
    }

    DialogScreen .dialog {
        width: 90%;
        height: auto;
        padding: 0 1;
        border: thick $accent;
        background: $surface;
    }
    """
