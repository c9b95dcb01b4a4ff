"""What tests and benchmarks inject into the app, in one object: its clocks and counters."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Probes:
    """The app's clocks and test knobs; read on every use, so a test may swap one mid-run.

    The defaults are what a user's app runs with.
    """

    now: Callable[[], float] = time.time
    """The wall clock: the sessions panel's relative times."""
    clock: Callable[[], float] = time.monotonic
    """The elapsed clock: how long a turn, a tool or a silence has lasted."""
    cursor_blink: bool = True
    blink_rest: float | None = None
    """Seconds after the last key before the cursor stops blinking (None: the composer's)."""
    demo_delay: float | None = None
    """Seconds between the demo model's chunks (None: its own pace, set for a person to read;
    a test that is not about the pace plays it at once)."""
    collect_before_freeze: bool = True
    """Whether start-up collects the garbage before it freezes the heap. A test process's
    heap is large and what it would collect lives only as long as the test: tests skip it."""
    approval_arm_seconds: float | None = None
    """How long an approval dialog waits for a quiet moment (None: the dialog's default)."""
    approval_clock: Callable[[], float] = time.monotonic
    """The clock that quiet moment is measured with."""
    tool_duration: Callable[[float], float] | None = None
    """Maps a finished tool's duration before its block shows it (None: as measured). The
    agent times tools on the real clock, so a snapshot fixes the figure a loaded machine
    would change."""
    ticks: int = 0
    """Liveness ticks so far (once a second)."""
    status_drawn: Callable[[], None] | None = None
    """Called after each status redraw that a batch of agent events asked for."""
    markdown_builds: int = 0
    """Chunks of long answers built as Markdown so far (Z2: only those near the view)."""
    markdown_built_chars: int = 0
    """The source characters of those chunks."""
    send_hold: Callable[[], Awaitable[None]] | None = None
    """Awaited while a turn is being sent (after Enter took the text, before the user's
    message is shown): a test holds the send there, as a slow send would (Z1)."""
    terminal_write: Callable[[str], None] | None = None
    """Takes what the app writes to the terminal besides frames (a bell, a notification):
    a test reads the bytes there; None writes them to the terminal."""
    margin_delay: float | None = None
    """Seconds after an opened session's view is built before the screens around it are
    (None: the transcript's MARGIN_DELAY, fill.py)."""
    gc_idle_delay: float | None = None
    """Seconds of idle after a resume before its catch-up collection (None: gc_pacing's
    IDLE_DELAY); read each time the catch-up is scheduled."""
    parse_hold: Callable[[], None] | None = None
    """Called on the parse thread before a long answer's chunks are parsed: a test holds the
    parse there, as a slow parse would, and checks the screen paints meanwhile (Z2)."""


def probe(app: object, name: str, default: Any = None) -> Any:
    """The app's probe `name`, or `default` for an app without probes (a widget's own test
    host app) or one that leaves it unset (None)."""
    value = getattr(getattr(app, "probes", None), name, None)
    return default if value is None else value


def cursor_blinks(app: object) -> bool:
    """Whether the app's text boxes blink their cursor (a test turns it off: a snapshot
    taken on a loaded machine would catch the cursor on or off)."""
    return bool(probe(app, "cursor_blink", True))
