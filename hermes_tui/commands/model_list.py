"""`/model` with no argument: the model in use and what each configured provider serves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_tui.completion.models import NO_KEY
from hermes_tui.safe_text import safe_name

if TYPE_CHECKING:
    from agent.config import ProviderConfig
    from agent.providers.discovery import ModelListing

SHOWN_PER_PROVIDER = 12
"""A server listing more (a hosted API lists hundreds) is cut here; Tab offers them all."""


def _one_line(text: str) -> str:
    """An outside string (a server's model id) as one inert line: controls and breaks shown."""
    return safe_name(text)


def _where(provider: ProviderConfig | None) -> str:
    from agent.credentials import safe_url
    from agent.providers.discovery import base_url

    return _one_line(safe_url(base_url(provider))) if provider is not None else ""


def _problem(name: str, provider: ProviderConfig | None, problem: str) -> str:
    """One sentence for a provider that lists nothing: which server, and what happened."""
    at = f" at {_where(provider)}" if provider is not None and _where(provider) else ""
    if problem.startswith("the server did not answer"):
        return f"{name}: the server{at} did not answer; is it running?"
    if problem == NO_KEY:
        return f"{name}: no API key is set (api_key or its environment variable), so not asked."
    if problem == "the server lists no models":
        return f"{name}: the server{at} lists no models."
    return f"{name}: its models could not be listed ({_one_line(problem)})."


def _models(name: str, models: Sequence[str], current: str) -> str:
    shown = [
        _one_line(m) + (" (in use)" if f"{name}:{m}" == current else "")
        for m in models[:SHOWN_PER_PROVIDER]
    ]
    more = len(models) - SHOWN_PER_PROVIDER
    tail = f", and {more:,} more" if more > 0 else ""
    return f"{name}: {', '.join(shown)}{tail}"


def listing_lines(
    current: str, listings: Sequence[ModelListing], providers: dict[str, ProviderConfig]
) -> list[str]:
    """The `/model` view: one line per provider, its models or why there are none."""
    lines = [f"Model: {_one_line(current)}. What each provider serves:"]
    for listing in listings:
        name = _one_line(listing.provider)
        provider = providers.get(listing.provider)
        if listing.models:
            lines.append("  " + _models(name, listing.models, current))
        else:
            lines.append("  " + _problem(name, provider, listing.problem or "no models"))
    lines.append("Switch with /model provider:model (Tab completes it).")
    return lines
