"""`provider:model` choices for `/model`'s Tab: the config's, then what servers list.

The config gives each provider's models it names (the default model, the session's, the
pricing table's). A server's own list comes through a `Lister`, asked once per provider on
a thread, never on a keystroke (agent/providers/discovery.py: servers on this machine, or
with `discover: true`); `/model` with no argument asks every provider (`list_all`, on a
worker thread too) and what they said joins the choices.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent.config import Config, ProviderConfig

if TYPE_CHECKING:
    from agent.providers.discovery import ModelListing

log = logging.getLogger("hermes_tui.completion")

Lister = Callable[[ProviderConfig], Sequence[str]]
"""Asks one provider's server for the models it lists (blocking; may raise)."""
ListEvery = Callable[[dict[str, ProviderConfig]], list["ModelListing"]]
"""Asks every provider side by side (blocking, a short deadline): discovery's own."""


def server_lister() -> Lister:
    """The providers' discovery as a Lister: servers it may ask list, others list nothing."""
    from agent.providers import discovery

    def lister(provider: ProviderConfig) -> Sequence[str]:
        return discovery.list_models(provider) if discovery.may_probe(provider) else ()

    return lister


NO_KEY = "no API key"


def no_key_listing(name: str) -> ModelListing:
    """A hosted provider with no key set: not asked (it would refuse)."""
    from agent.providers.discovery import ModelListing

    return ModelListing(name, problem=NO_KEY)


def insertable(model: str) -> bool:
    """A server's model id Tab may type into the composer: printable, no spaces (a hostile
    server's id with controls or line breaks is shown by `/model`, never inserted)."""
    return bool(model) and model.isprintable() and not any(c.isspace() for c in model)


def configured_refs(config: Config, current: str | None) -> list[str]:
    """Every provider:model the config names, the current model first."""
    refs: list[str] = [current] if current else []
    refs.append(config.model)
    for name, provider in sorted(config.providers.items()):
        refs.extend(f"{name}:{model}" for model in sorted(provider.pricing) if model != "*")
    return list(dict.fromkeys(refs))


class ModelCatalog:
    """The models `/model` completes to; servers' lists are fetched once, off the UI thread."""

    def __init__(
        self, config: Config, lister: Lister | None = None, list_every: ListEvery | None = None
    ) -> None:
        self.config = config
        self.lister = lister
        self.list_every = list_every
        self.listed: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._fetching: threading.Thread | None = None

    def refs(self, current: str | None) -> list[str]:
        """Configured models, then each server's (fetched so far), then `provider:` stems."""
        refs = configured_refs(self.config, current)
        with self._lock:
            listed = dict(self.listed)
        for name in sorted(listed):
            refs.extend(f"{name}:{model}" for model in listed[name] if insertable(model))
        refs.extend(f"{name}:" for name in sorted(self.config.providers))
        return list(dict.fromkeys(refs))

    def fetch(self, done: Callable[[], object] | None = None) -> None:
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

    def list_all(self) -> list[ModelListing]:
        """Every provider's models or why not (blocking: run it off the UI thread); kept."""
        list_every = self.list_every
        if list_every is None:
            from agent.providers.discovery import list_provider_models

            list_every = list_provider_models
        providers = self.config.providers
        # A hosted API without a key would only refuse: it is not asked, and says why.
        keyless = {n for n, p in providers.items() if not p.is_local and not p.resolved_key()}
        asked = {n: p for n, p in providers.items() if n not in keyless}
        found = {listing.provider: listing for listing in list_every(asked)} if asked else {}
        listings = [found.get(n) or no_key_listing(n) for n in providers]
        with self._lock:
            for listing in listings:
                if listing.models:
                    self.listed[listing.provider] = tuple(listing.models)
        return listings
