"""`provider:model` choices for `/model`'s Tab: the config's, then what servers list.

The config gives each provider's models it names (the default model, the session's, the
pricing table's). A server's own list comes through a `Lister`, asked once per provider on
a thread, never on a keystroke: `server_lister()` is the seam for the providers' discovery
module (agent/providers/discovery.py, issue 16): while that module is not installed it is
None and only the config's models are offered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from agent.config import Config, ProviderConfig

log = logging.getLogger("hermes_tui.completion")

Lister = Callable[[ProviderConfig], Sequence[str]]
"""Asks one provider's server for the models it lists (blocking; may raise)."""


def server_lister() -> Lister | None:
    """The providers' discovery as a Lister (servers it may ask), or None without it."""
    try:
        from agent.providers import discovery  # type: ignore[attr-defined]
    except ImportError:
        return None
    list_models = getattr(discovery, "list_models", None)
    may_probe = getattr(discovery, "may_probe", None)
    if list_models is None or may_probe is None:
        return None

    def lister(provider: ProviderConfig) -> Sequence[str]:
        return tuple(list_models(provider)) if may_probe(provider) else ()

    return lister


def configured_refs(config: Config, current: str | None) -> list[str]:
    """Every provider:model the config names, the current model first."""
    refs: list[str] = [current] if current else []
    refs.append(config.model)
    for name, provider in sorted(config.providers.items()):
        refs.extend(f"{name}:{model}" for model in sorted(provider.pricing) if model != "*")
    return list(dict.fromkeys(refs))


class ModelCatalog:
    """The models `/model` completes to; servers' lists are fetched once, off the UI thread."""

    def __init__(self, config: Config, lister: Lister | None = None) -> None:
        self.config = config
        self.lister = lister
        self.listed: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._fetching: threading.Thread | None = None

    def refs(self, current: str | None) -> list[str]:
        """Configured models, then each server's (fetched so far), then `provider:` stems."""
        refs = configured_refs(self.config, current)
        with self._lock:
            listed = dict(self.listed)
        for name in sorted(listed):
            refs.extend(f"{name}:{model}" for model in listed[name])
        refs.extend(f"{name}:" for name in sorted(self.config.providers))
        return list(dict.fromkeys(refs))

    def fetch(self, done: Callable[[], None] | None = None) -> None:
        """Ask the servers for their lists on a thread, once; `done` is called after."""
        if self.lister is None or self._fetching is not None:
            return
        self._fetching = threading.Thread(
            target=self._fetch_all, args=(done,), name="model-lists", daemon=True
        )
        self._fetching.start()

    def _fetch_all(self, done: Callable[[], None] | None) -> None:
        assert self.lister is not None
        for name, provider in sorted(self.config.providers.items()):
            try:
                models = tuple(self.lister(provider))
            except Exception as exc:  # a server that does not answer offers nothing
                log.info("no model list from %s: %s", name, type(exc).__name__)
                continue
            with self._lock:
                self.listed[name] = models
        if done is not None:
            done()
