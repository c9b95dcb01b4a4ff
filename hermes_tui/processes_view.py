"""The background processes (G2) as terminal-safe text: a row each for /ps, its detail, and
the status panel's lines."""

from __future__ import annotations

from agent.background import PRIVATE_NETWORK, BackgroundProcess
from hermes_tui.durations import format_duration
from hermes_tui.safe_text import safe_name, safe_output

DETAIL_LINES = 20
"""Output lines the /ps detail shows of the highlighted process."""


def ports_text(ports: list[int]) -> str:
    """`:8000 :8001`, or "" when it listens on none."""
    return " ".join(f":{port}" for port in ports)


def process_row(entry: BackgroundProcess, now: float) -> str:
    """`bg1  running  2 min  :8000  python3 -m http.server` on one row."""
    state = entry.state()
    age = format_duration(entry.age(now))
    ports = ports_text(entry.ports()) or "–"
    return f"{entry.id:<4} {state:<10} {age:>7}  {ports:<12} {safe_name(entry.command)}"


def process_detail(entry: BackgroundProcess) -> str:
    """The command, its ports and its last output lines, for the panel under the list."""
    lines = [f"$ {safe_name(entry.command)}"]
    ports = entry.ports()
    if ports:
        where = f" ({PRIVATE_NETWORK})" if entry.private_network else ""
        lines.append(f"listening on {ports_text(ports)}{where}")
    lines.append(f"output ({entry.ring.total} bytes in all), the last lines:")
    tail = entry.ring.tail_lines(DETAIL_LINES)
    lines += [safe_output(line) for line in tail] or ["(no output yet)"]
    return "\n".join(lines)


def panel_rows(running: list[BackgroundProcess]) -> tuple[str, ...]:
    """The status panel's rows: `:8000 python3 -m http.server` for each running process."""
    rows = []
    for entry in running:
        ports = ports_text(entry.ports()[:1])
        rows.append(f"{ports} {safe_name(entry.command)}" if ports else safe_name(entry.command))
    return tuple(rows)
