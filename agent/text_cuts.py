"""Cutting text to a size: at a line end for a file's contents, with an ellipsis for a label."""

from __future__ import annotations


def cut_at_line_end(text: str, cap: int) -> str:
    """`text` within `cap` characters, cut at the last line end when one is in its second half.

    A file shown to the model (an `@` attachment, an instruction file) then ends on a whole
    line; a cut with no line end near keeps all `cap` characters rather than very few.
    """
    if len(text) <= cap:
        return text
    head = text[:cap]
    line_end = head.rfind("\n")
    return head[: line_end + 1] if line_end > cap // 2 else head


def cut_with_ellipsis(text: str, width: int) -> str:
    """`text` within `width` characters; a cut one ends in `…` (counted in the width)."""
    return text if len(text) <= width else text[: width - 1] + "…"
