"""Whether two pieces of Textual `Content` draw the same (the skip-if-unchanged checks)."""

from __future__ import annotations

from textual.content import Content


def same_content(shown: object, new: Content) -> bool:
    """True when `shown` is Content with `new`'s text and styles.

    `Content.__eq__` compares the text alone (it is meant for sorting), so a check built on
    `==` would skip a redraw whose only change is a colour: the state's dot, a warning.
    """
    return isinstance(shown, Content) and (shown.plain, shown.spans) == (new.plain, new.spans)
