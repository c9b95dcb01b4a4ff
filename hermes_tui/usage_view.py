"""Spend and tokens by day, model and project ($2): the rows `/usage` and `hermes-tui usage`
show, read from the store, with what the cache saved where the prices are known."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from hermes_tui.safe_text import safe_name

if TYPE_CHECKING:
    from agent.config import Config
    from storage.spend import UsageRow

HEADERS = ("day", "project", "model", "calls", "in", "out", "cache read", "cost", "saved")
"""The table's columns, in order (the screen's and the CLI's alike)."""
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class UsageLine:
    """One row of the view: a day's use of one model in one project."""

    day: str
    project: str
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: float | None
    saved_usd: float | None
    """What cache reads saved against the input price (None: no price known)."""

    def cells(self) -> tuple[str, ...]:
        """The row as the table shows it (outside text made safe to draw)."""
        return (
            self.day,
            safe_name(self.project) or "(deleted session)",
            safe_name(self.model),
            f"{self.calls:,}",
            f"{self.input_tokens:,}",
            f"{self.output_tokens:,}",
            f"{self.cache_read_tokens:,}",
            dollars(self.cost_usd),
            dollars(self.saved_usd),
        )

    def as_json(self) -> dict[str, object]:
        """The row for `--json`."""
        return asdict(self)


def dollars(usd: float | None) -> str:
    """A cost cell: four places, or "–" when no price was known."""
    return "–" if usd is None else f"${usd:,.4f}"


def usage_lines(rows: Sequence[UsageRow], config: Config) -> list[UsageLine]:
    """The store's rows as the view's, the saving priced by the config's prices."""
    from agent.config import tilde
    from agent.usage import cache_savings

    lines = []
    for row in rows:
        provider = config.providers.get(row["provider"])
        project = tilde(row["workspace"]) if row["workspace"] else ""
        lines.append(
            UsageLine(
                day=row["day"],
                project=project,
                model=f"{row['provider']}:{row['model']}",
                calls=row["api_calls"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                cache_read_tokens=row["cache_read_tokens"],
                cost_usd=row["cost_usd"],
                saved_usd=cache_savings(provider, row["model"], row["cache_read_tokens"]),
            )
        )
    return lines


def total_line(lines: Sequence[UsageLine]) -> tuple[str, ...]:
    """The table's last row: every line summed (a cost with no price counts as none)."""
    costs = [line.cost_usd for line in lines if line.cost_usd is not None]
    saved = [line.saved_usd for line in lines if line.saved_usd is not None]
    return (
        "total",
        "",
        "",
        f"{sum(line.calls for line in lines):,}",
        f"{sum(line.input_tokens for line in lines):,}",
        f"{sum(line.output_tokens for line in lines):,}",
        f"{sum(line.cache_read_tokens for line in lines):,}",
        dollars(sum(costs) if costs else None),
        dollars(sum(saved) if saved else None),
    )


def plain_table(lines: Sequence[UsageLine]) -> str:
    """The view as a plain text table, columns padded, numbers right-aligned."""
    rows = [HEADERS, *(line.cells() for line in lines), total_line(lines)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    out = []
    for row in rows:
        cells = [
            cell.ljust(width) if i < 3 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out) + "\n"
