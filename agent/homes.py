"""Where the app keeps its files, and paths as the user sees them."""

from __future__ import annotations

import os
from pathlib import Path


def default_home() -> Path:
    """$HERMES_TUI_HOME, else the platform's user config dir for hermes-tui."""
    env = os.environ.get("HERMES_TUI_HOME")
    if env:
        return Path(env).expanduser()
    return platform_home()


def platform_home() -> Path:
    """The platform's user config dir for hermes-tui (~/.config/hermes-tui on Linux)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("hermes-tui"))


def tilde(path: Path | str) -> str:
    """`path` with the user's home shown as `~` (short, and the same on every machine)."""
    text, home = str(path), str(Path.home())
    if home not in ("", os.sep) and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text
