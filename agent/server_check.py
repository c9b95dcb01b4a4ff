"""Before a turn's first request: ask the server what it serves, and check the model (item 6).

A server on this machine (or one configured with `discover: true`) is asked once per process
and model (agent/providers/discovery.py): its answer feeds the context window, and a model it
does not list gets one warning before anything is sent. A single-model llama-server answers
whatever model a request names, so a session would be stored under a name the server never
served: the check adopts the id the server reports instead, and says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agent.config import ProviderConfig
from agent.credentials import safe_url
from agent.providers.discovery import SERVERS, ServerFacts, model_listed

log = logging.getLogger("hermes_tui.agent")

LISTED_IN_WARNING = 5
"""At most this many of the server's models are named in the warning."""


@dataclass(frozen=True)
class ModelCheck:
    """What the check found: a warning to show (or None), and the model to use instead."""

    warning: str | None = None
    served: str | None = None


def check_model(provider: ProviderConfig, model: str, facts: ServerFacts | None) -> ModelCheck:
    """Whether the server lists `model`; a single-model llama-server's own id otherwise."""
    if facts is None or not facts.models or model_listed(facts.models, model):
        return ModelCheck()
    where = f"{provider.name} at {safe_url(provider.base_url)}"
    if facts.answers_any_model:
        served = facts.models[0]
        return ModelCheck(
            f"{where} serves one model, {served!r}, not {model!r}: it answers any name, so "
            f"this session is recorded under {served!r}.",
            served,
        )
    shown = ", ".join(facts.models[:LISTED_IN_WARNING])
    more = (
        f" and {len(facts.models) - LISTED_IN_WARNING} more"
        if len(facts.models) > LISTED_IN_WARNING
        else ""
    )
    return ModelCheck(
        f"{where} does not list model {model!r} (it lists {shown}{more}): the request may "
        "fail; pick one with /model."
    )


def ask_server(provider: ProviderConfig, model: str) -> ServerFacts | None:
    """The server's answer about `model` (blocking, short timeouts); None when not asked."""
    try:
        facts = SERVERS.facts(provider, model)
    except Exception:  # discovery is advice: it never fails a turn
        log.exception("asking %s about its models failed", provider.name)
        return None
    if facts is not None and facts.reachable:
        log.info(
            "%s serves %s; context window of %s: %s (%s)",
            provider.name,
            ", ".join(facts.models or ()) or "no listing",
            model,
            facts.context_window or "unknown",
            facts.window_source or "-",
        )
    return facts


class ServerAsker:
    """Asks the server of each model once per agent; a server that did not answer (still
    starting) or answered 503 (loading its model) is asked again at the next turn."""

    def __init__(self) -> None:
        self._asked: set[str] = set()

    def ask(self, provider: ProviderConfig | None, ref: str, model: str) -> ModelCheck | None:
        """The check of `model` (`ref`: provider:model) against its server, or None when
        there is nothing to check (asked already, no such provider, no answer yet)."""
        if ref in self._asked or provider is None:
            return None
        facts = ask_server(provider, model)
        if facts is not None and (not facts.reachable or facts.loading):
            return None  # asked again at the next turn, once the server is ready
        self._asked.add(ref)
        return check_model(provider, model, facts)
