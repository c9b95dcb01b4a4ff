"""A word when a turn ends, fails or waits for an approval while the user looks elsewhere:
the terminal bell or a desktop notification (OSC 9 / OSC 777, through tmux), per `ui.notify`.

Told only when the terminal is not focused (focus reporting: Textual's AppBlur/AppFocus) or
the turn took longer than `ui.notify_after_seconds`. The text may come from the model (an
error, a tool's name): it is cut to one short line with no control character.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from agent import events as ev
from agent.kinds import TurnStatus

if TYPE_CHECKING:
    from hermes_tui.probes import Probes
    from hermes_tui.ui_config import UISettings

TITLE = "hermes-tui"
MAX_CHARS = 120
"""A notification's text is cut to this many characters."""
BELL = "\a"
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]+")


class NotifyMode(StrEnum):
    """`ui.notify`: how a turn's end is told when the user is not looking."""

    BELL = "bell"
    DESKTOP = "desktop"
    OFF = "off"


def clean(text: str, limit: int = MAX_CHARS) -> str:
    """`text` as one short line: control, bidi and zero-width characters become spaces, runs
    of spaces one, `;` (OSC 777's separator) a comma, cut to `limit` with an ellipsis."""
    line = " ".join(_UNSAFE.sub(" ", text).split()).replace(";", ",")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def desktop_sequence(text: str, env: Mapping[str, str]) -> str:
    """The escape sequence of a desktop notification: OSC 777 where the terminal reads it
    (foot, urxvt, VTE terminals such as GNOME Terminal), else OSC 9 (iTerm2, WezTerm,
    ghostty, kitty, Windows Terminal); inside tmux, wrapped in its DCS passthrough."""
    body = clean(text)
    term = env.get("TERM", "")
    if env.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        sequence = f"\x1b]777;notify;{TITLE};{body}\x07"
    else:
        sequence = f"\x1b]9;{TITLE}: {body}\x07"
    if env.get("TMUX"):
        # tmux passes a DCS `tmux;` body on to the outer terminal, its ESCs doubled
        # (with `allow-passthrough on`; without it, nothing is shown and nothing breaks).
        sequence = "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def signal(mode: str, text: str, env: Mapping[str, str]) -> str:
    """What to write to the terminal for `text` in `mode` ("" for off)."""
    if mode == NotifyMode.BELL:
        return BELL  # tmux rings (or shows) a bell of its own accord
    if mode == NotifyMode.DESKTOP:
        return desktop_sequence(text, env)
    return ""


class NotifyHost(Protocol):
    """What the notifier uses of the app: its `ui:` settings, the clock of its probes and
    whether the terminal has the focus."""

    ui_settings: UISettings
    probes: Probes

    @property
    def app_focus(self) -> bool:
        """Whether the terminal has the focus (focus reporting)."""
        ...


class Notifier:
    """Tells the user a turn ended, failed or waits for an approval, when they look away."""

    def __init__(self, app: NotifyHost, write: Callable[[str], None]) -> None:
        self.app = app
        self._write = write
        self._started: float | None = None

    def routes(self) -> Iterable[tuple[type, Any]]:
        """The turn's start and end (see EventRouter)."""
        yield ev.TurnStarted, self._turn_started
        yield ev.TurnFinished, self._turn_finished

    def _turn_started(self, _event: ev.TurnStarted) -> None:
        self._started = self.app.probes.clock()

    def _turn_finished(self, event: ev.TurnFinished) -> None:
        if event.status == TurnStatus.STOPPED:
            return  # the user stopped it: they are here
        failed = event.status == TurnStatus.ERROR
        self.tell("The turn failed." if failed else "The turn finished.")
        self._started = None

    def approval_waiting(self, tool: str) -> None:
        """An approval dialog opened for `tool`."""
        self.tell(f"Approval needed: {tool}.")

    def tell(self, text: str) -> None:
        """Ring or notify when the terminal is not focused or the turn has run long."""
        settings = self.app.ui_settings
        if settings.notify == NotifyMode.OFF:
            return
        took = 0.0 if self._started is None else self.app.probes.clock() - self._started
        if self.app.app_focus and took < settings.notify_after_seconds:
            return
        data = signal(settings.notify, text, os.environ)
        if data:
            self._write(data)
