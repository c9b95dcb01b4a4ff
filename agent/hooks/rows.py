"""The transcript's row for one hook run (`◈ hook ruff: 2 problems (after_tool)`), in words.

Pure text from the row's metadata, so the TUI's marker, a resumed transcript and headless
output say the same; the caller makes it terminal-safe (H1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.text_cuts import cut_with_ellipsis

HOOK_ROW = "hook"
"""The display kind of a hook run's row (D1: shown and stored, never sent)."""
SUMMARY_CHARS = 100


def hook_row_text(metadata: Mapping[str, Any]) -> str:
    """`◈ hook NAME: SUMMARY (EVENT)` for a stored or live hook row."""
    name = str(metadata.get("name") or "hook")
    summary = cut_with_ellipsis(" ".join(str(metadata.get("summary") or "").split()), SUMMARY_CHARS)
    event = metadata.get("event")
    origin = " · project" if metadata.get("origin") == "project" else ""
    where = f" ({event}{origin})" if event else ""
    return f"◈ hook {name}: {summary or 'ok'}{where}"
