"""The status panel and /help say what the sandbox hides from shell commands (H9)."""

from __future__ import annotations

import pytest
from ui.tui_helpers import FIXED_NOW, quick_probes
from waits import wait_until

from agent.config import load_config
from agent.tools.hiding import CREDENTIAL_PLACES
from agent.tools.sandbox import probe
from hermes_tui.app import HermesApp
from hermes_tui.screens.help import HelpScreen

REAL = probe()


def app_with(hermes_home, workspace, sandbox: str) -> HermesApp:
    (hermes_home / "config.yaml").write_text(f"sandbox: {sandbox}\n")
    probes = quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0)
    return HermesApp(load_config(demo=True), workspace=workspace, probes=probes)


async def open_help(app, pilot) -> str:
    await app.submit("/help")
    await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), what="/help")
    return " ".join(str(app.screen.query_one("#help-sandbox").content).split())


@pytest.mark.skipif(not REAL.works, reason=f"no sandbox here: {REAL.reason}")
async def test_the_panel_and_help_name_what_is_hidden(
    hermes_home, workspace, tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path))
    app = app_with(
        hermes_home, workspace, "{mode: auto, hide: [~/.secrets], allow_read: [~/.npmrc]}"
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        count = len(CREDENTIAL_PLACES)  # one more hidden, one brought back
        panel = app.query_one("#status").text
        assert f"sandbox bwrap home + {count} credential places hidden" in panel
        said = await open_help(app, pilot)
    assert "the app's own home (~/hermes-home" in said
    for place in ("~/.ssh", "~/.aws", "~/.mozilla", "~/.secrets"):
        assert place in said
    assert "~/.npmrc" not in said
    assert "sandbox: {hide: [...], allow_read: [...]}" in said


async def test_help_says_when_nothing_is_confined(hermes_home, workspace):
    app = app_with(hermes_home, workspace, "off")
    async with app.run_test(size=(140, 40)) as pilot:
        await app.ready()
        assert "credential places" not in app.query_one("#status").text
        said = await open_help(app, pilot)
    assert said == "Shell commands are not sandboxed: the sandbox is off (`sandbox: off`)."
