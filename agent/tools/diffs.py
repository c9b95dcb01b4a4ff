"""Unified diffs of file changes: for the approval dialog, the tool block and /diff (X1)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

DIFF_CAP = 20_000
"""Characters of diff text kept for the screen and the database; the counts stay whole."""

DIFF_KEY = "diff"
"""The display_metadata key a file tool's result carries its diff under."""


@dataclass(frozen=True)
class FileDiff:
    """One file's change: its path, the (capped) unified diff, lines added and removed."""

    path: str
    text: str
    added: int
    removed: int

    def metadata(self) -> dict[str, Any]:
        """The form kept in a tool result's display_metadata (never sent to a model, D1)."""
        return {"path": self.path, "text": self.text, "added": self.added, "removed": self.removed}

    @classmethod
    def from_metadata(cls, data: Any) -> FileDiff | None:
        """The diff a stored row carries, or None when it has none (or a malformed one)."""
        if not isinstance(data, dict):
            return None
        path, text = data.get("path"), data.get("text")
        added, removed = data.get("added"), data.get("removed")
        if not isinstance(path, str) or not isinstance(text, str):
            return None
        if not isinstance(added, int) or not isinstance(removed, int):
            return None
        return cls(path, text, added, removed)


def file_diff(old: str, new: str, name: str, cap: int = DIFF_CAP) -> FileDiff:
    """The change `old` -> `new` of file `name`: a capped unified diff and whole counts."""
    added = removed = 0
    out: list[str] = []
    size = 0
    total = 0
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    for index, line in enumerate(lines):
        if index >= 2:  # after the ---/+++ header
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        total += 1
        if size <= cap:
            out.append(line)
            size += len(line)
    text = "".join(out)
    if size > cap:
        text = text[:cap].rsplit("\n", 1)[0] + "\n"
        shown = text.count("\n")
        text += f"[... diff truncated: about {max(total - shown, 1)} more lines ...]\n"
    return FileDiff(name, text, added, removed)


def unified_diff(old: str, new: str, name: str, cap: int = DIFF_CAP) -> str:
    """A unified diff of `old` -> `new` for `name`, capped to about `cap` characters."""
    return file_diff(old, new, name, cap).text or "(no changes)\n"
