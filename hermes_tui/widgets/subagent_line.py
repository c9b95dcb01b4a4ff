"""A `task` call's subagent in its tool block's header: what it runs, its calls, its tokens
(G1), live while it works and from the stored result's metadata after."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.content import Content

from hermes_tui.safe_text import safe_name
from hermes_tui.widgets.status_panel import human_count


@dataclass
class SubagentActivity:
    """The subagent's state as its block shows it."""

    tool: str = ""
    tool_calls: int = 0
    tokens: int = 0

    @classmethod
    def of(cls, display: Mapping[str, Any] | None) -> SubagentActivity | None:
        """The finished subagent a `task` result's display metadata describes, or None."""
        found = (display or {}).get("subagent")
        if not isinstance(found, Mapping):
            return None
        calls, tokens = found.get("tool_calls"), found.get("tokens")
        return cls(
            tool_calls=calls if isinstance(calls, int) else 0,
            tokens=tokens if isinstance(tokens, int) else 0,
        )

    def content(self, running: bool) -> Content:
        """`read_file a.py · 3 calls · 1.2k tokens` (the tool call only while it runs)."""
        calls = f"{self.tool_calls} call{'' if self.tool_calls == 1 else 's'}"
        parts = [calls, f"{human_count(self.tokens)} tokens"]
        if running and self.tool:
            # The subagent's model names the tool and writes its arguments: shown as is.
            parts.insert(0, safe_name(self.tool))
        return Content.styled("  " + " · ".join(parts), "dim")
