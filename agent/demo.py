"""The demo model: the scripted server in-process, playing demo.yaml on 127.0.0.1."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agent.config import DEMO_CONTEXT_WINDOW, DEMO_PROVIDER, Config, ProviderConfig, ProviderKind

if TYPE_CHECKING:
    from agent.scripted import ScriptedServer


def start_demo(
    config: Config, *, delay: float | None = None
) -> tuple[Config, ScriptedServer | None]:
    """Start the demo server when `config.demo`; returns (config pointing at it, server|None).

    `delay`: seconds between the stream's chunks (None: the tour's own pace, set for a person
    to read; a test that is not about the pace plays it at once).
    """
    if not config.demo:
        return config, None
    from agent.scripted import Script, ScriptedServer

    script = Script.load_demo()
    if delay is not None:
        script = replace(script, defaults={**script.defaults, "delay": delay})
    server = ScriptedServer(script).start()
    demo = ProviderConfig(
        name=DEMO_PROVIDER,
        kind=ProviderKind.OPENAI,
        base_url=server.openai_base_url,
        api_key="demo",
        context_window=DEMO_CONTEXT_WINDOW,
        discover=False,  # nothing to ask: the demo server is ours
    )
    providers = {**config.providers, DEMO_PROVIDER: demo}
    return replace(config, providers=providers), server
