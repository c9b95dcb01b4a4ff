"""The agent core: plain Python, no Textual. See DESIGN.md for the public API."""

from typing import Any

from agent.version import VERSION as __version__

__all__ = ["Agent", "TurnResult", "__version__", "load_config"]


def __getattr__(name: str) -> Any:  # a class or a function, found on first use
    # Lazy: importing `agent` must stay cheap (the TUI's first frame waits on it).
    if name in ("Agent", "TurnResult"):
        from agent import loop

        return getattr(loop, name)
    if name == "load_config":
        from agent.config import load_config

        return load_config
    raise AttributeError(name)
