"""The first turn's imports, done on a thread once the app is up rather than after Enter.

A first turn imported the SDK and the answer's Markdown widgets while its answer streamed in
(about a second of CPU on a loaded machine, a third of a 20,000-chunk turn), and the first
code block shown (an answer's, a resumed session's, a diff's) loaded Pygments and compiled
the Python lexer's rules on the UI thread (about 280 ms here). The user is reading the
screen by then; the thread does it meanwhile. A turn that starts before it is
done waits on the import lock for the rest only: nothing is imported twice.

The first turn's worker also asked the model's server what it serves (agent/server_check.py)
and read the price table before its request went out: a round trip and a YAML load between
Enter and the first token. A second thread asks both ahead; the process keeps the answers
(agent/providers/discovery.py's SERVERS, the table's cache), so the turn's check reads them
instead of asking again (a turn that starts first waits for that one answer).
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.loop import Agent

log = logging.getLogger("hermes_tui.preload")

FIRST_TURN_MODULES = ("hermes_tui.widgets.answer", "hermes_tui.widgets.live_answer")
"""The widgets a streamed answer is shown with (their imports pull in Markdown's parser)."""


def preload_first_turn(agent: Agent) -> tuple[threading.Thread, threading.Thread]:
    """Start importing what the first turn needs, and asking what it will ask, on daemon
    threads (an exit never waits): (the imports' thread, the asking one)."""
    threads = (
        threading.Thread(target=_preload, args=(agent,), name="hermes-preload", daemon=True),
        threading.Thread(target=ask_ahead, args=(agent,), name="hermes-ask-ahead", daemon=True),
    )
    for thread in threads:
        thread.start()
    return threads


def ask_ahead(agent: Agent) -> None:
    """Ask the current model's server about it and read the price table, as the first turn
    would before its request (a silent server costs this thread its short timeout only)."""
    from agent.price_table import price_table
    from agent.server_check import ask_server

    try:
        provider = agent.config.providers.get(agent.provider_name)
        if provider is not None:
            ask_server(provider, agent.model_name)
        price_table()
    except Exception:  # the first turn asks again and reports what fails there
        log.debug("asking ahead of the first turn failed", exc_info=True)


def _preload(agent: Agent) -> None:
    from agent.providers.factory import preload_wire

    try:
        provider = agent.config.providers.get(agent.provider_name)
        preload_wire(provider.kind if provider is not None else "openai")
        for name in FIRST_TURN_MODULES:
            importlib.import_module(name)
        warm_highlighter()
    except Exception:  # the first turn imports it again and reports what fails there
        log.debug("preloading the first turn's modules failed", exc_info=True)


def warm_highlighter() -> None:
    """Load the code highlighter and compile the Python lexer's rules (on first use, once)."""
    from textual.highlight import highlight

    highlight("def warm(up: int) -> str:\n    return f'{up}'\n", language="python")
