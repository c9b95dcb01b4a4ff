"""The status panel: model, provider, tokens, cost, context bar and turn state (U1, L3)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

BAR_WIDTH = 12


def human_count(n: int) -> str:
    """1234 -> 1.2k, 2_500_000 -> 2.5M."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def context_bar(used: int, window: int | None, width: int = BAR_WIDTH) -> str:
    """A fixed-width bar of how full the context window is."""
    if not window:
        return "░" * width + " ?"
    fraction = min(1.0, used / window)
    filled = round(fraction * width)
    return "█" * filled + "░" * (width - filled) + f" {fraction:.0%}"


@dataclass
class StatusState:
    """Everything the status panel shows."""

    model: str = ""
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    context_used: int = 0
    context_window: int | None = None
    state: str = "idle"
    detail: str = ""
    started_at: float | None = None
    hint: str = ""


class StatusPanel(Static):
    """Renders `StatusState`; the app changes `status` and calls `refresh_status(now)`."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = StatusState()

    def refresh_status(self, now: float) -> None:
        """Re-render with elapsed time measured at `now` (monotonic seconds)."""
        s = self.status
        cost = f"${s.cost_usd:.4f}" if s.cost_usd is not None else "–"
        elapsed = ""
        if s.started_at is not None:
            elapsed = f" {int(max(0.0, now - s.started_at))}s"
        state_style = {"idle": "$success", "error": "$error", "stopped": "$error"}.get(
            s.state, "$warning"
        )
        lines = [
            Content.assemble(("Model", "bold $accent")),
            Content(s.model),
            Content.assemble(("provider ", "dim"), s.provider),
            Content(""),
            Content.assemble(("tokens", "bold $accent")),
            Content.assemble(
                ("in ", "dim"),
                human_count(s.input_tokens),
                ("  out ", "dim"),
                human_count(s.output_tokens),
            ),
            Content.assemble(("cost ", "dim"), cost),
            Content.assemble(("context", "dim")),
            Content(context_bar(s.context_used, s.context_window)),
            Content(""),
            Content.assemble(("Turn", "bold $accent")),
            Content.assemble(("● ", state_style), s.state, (elapsed, "dim")),
        ]
        if s.detail:
            lines.append(Content(s.detail))
        if s.hint:
            lines += [Content(""), Content.assemble((s.hint, "$warning"))]
        self.update(Content("\n").join(lines))
