"""What the app remembers of the screen between runs (the sessions panel's width), kept in
`ui-state.json` under the app's home: the app's own state, not the user's config.yaml.

A missing, unreadable or malformed file is an empty state (the defaults), never an error at
start; a failed write is logged and the app goes on with the value in memory.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("hermes_tui.ui_state")

STATE_FILE = "ui-state.json"


class UIState:
    """The remembered screen settings, read once and written at each change."""

    def __init__(self, home: Path | None) -> None:
        self.path = home / STATE_FILE if home is not None else None
        self._values = self._read()

    @property
    def sessions_width(self) -> int | None:
        """The sessions panel width the user chose (None: the terminal's width decides)."""
        value = self._values.get("sessions_width")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @sessions_width.setter
    def sessions_width(self, columns: int) -> None:
        self._values["sessions_width"] = columns
        self._write()

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            values = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", self.path, exc)
            return {}
        return values if isinstance(values, dict) else {}

    def _write(self) -> None:
        if self.path is None:
            return
        # A new file moved into place: a crash mid-write never leaves half a file.
        partial = self.path.with_name(f".{STATE_FILE}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps(self._values, indent=1), encoding="utf-8")
            partial.replace(self.path)
        except OSError as exc:
            log.warning("could not save %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
