"""The context bar shows the window compaction measures against, for every model (C1, U1)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ui.tui_helpers import FIXED_NOW, quick_probes
from waits import wait_until

from agent.config import load_config
from agent.models import DEFAULT_CONTEXT_WINDOW
from hermes_tui.app import HermesApp


def windows(app: HermesApp) -> tuple[int | None, int]:
    """(the status bar's window, the window compaction's threshold is taken of)."""
    agent = app.agent
    _tokens, compaction_window = agent.compressor.measure(agent)
    return app.status_panel.status.context_window, compaction_window


async def test_context_bar_and_compaction_use_one_window(
    scripted_in_process, hermes_home: Path, workspace: Path
):
    server = scripted_in_process({"replies": [{"text": "ok"}]})
    provider = {"kind": "openai", "base_url": server.openai_base_url, "api_key": "test"}
    config = {
        "model": "scripted:my-local-model",
        "providers": {"scripted": provider, "sized": {**provider, "context_window": 50_000}},
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    app = HermesApp(
        load_config(),
        workspace=workspace,
        probes=quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.status_panel.status.model, what="the model shown")
        # A model nobody knows: unknown on the bar; compaction assumes its documented size.
        assert windows(app) == (None, DEFAULT_CONTEXT_WINDOW)
        # A model the table knows.
        await app.submit("/model scripted:gpt-4o")
        await wait_until(pilot, lambda: app.status_panel.status.model == "scripted:gpt-4o")
        assert windows(app) == (128_000, 128_000)
        # The configured `context_window` wins over the table.
        await app.submit("/model sized:gpt-4o")
        await wait_until(pilot, lambda: app.status_panel.status.model == "sized:gpt-4o")
        assert windows(app) == (50_000, 50_000)
