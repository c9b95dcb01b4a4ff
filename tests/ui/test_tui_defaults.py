"""Honest defaults in the TUI (issue 17 item 1): a configured model without its key is said
at once, in the transcript and the status panel, and nothing is sent or stored."""

from __future__ import annotations

import yaml
from ui.tui_helpers import FIXED_NOW, quick_probes, type_keys

from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.messages import ErrorBlock, NoticeLine


def hosted_app(home, workspace, **more_providers) -> HermesApp:
    provider = {"kind": "openai", "base_url": "https://api.openai.com/v1", "api_key_env": "MY_KEY"}
    providers = {"openai": provider, **more_providers}
    config = {"model": "openai:gpt-4.1", "providers": providers}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    probes = quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0)
    return HermesApp(load_config(), workspace=workspace, probes=probes)


async def test_a_model_without_its_key_is_a_notice_and_a_status_line(
    hermes_home, workspace, monkeypatch
):
    monkeypatch.delenv("MY_KEY", raising=False)
    app = hosted_app(hermes_home, workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await pilot.pause()
        notices = [n.text for n in app.transcript.query(NoticeLine)]
        assert any("No API key for provider openai" in n and "MY_KEY" in n for n in notices)
        status = app.status_panel
        assert status.status.model == "openai:gpt-4.1"
        assert status.status.hint_level == "error"
        assert "No API key for provider openai" in status.text and "MY_KEY" in status.text
        assert "Demo model" not in status.text

        await type_keys(pilot, *"hi there", "enter")
        await app.wait_for_turn()
        await pilot.pause()
        errors = [e.message for e in app.transcript.query(ErrorBlock)]
        assert len(errors) == 1 and "MY_KEY" in errors[0]
        assert app.composer.text == "hi there", "the message comes back, never lost"
        assert app.agent.session_id is None, "nothing was stored"
        assert await app.db.list_sessions() == []


async def test_switching_to_a_provider_with_a_key_clears_the_line(
    hermes_home, workspace, monkeypatch
):
    monkeypatch.delenv("MY_KEY", raising=False)
    app = hosted_app(hermes_home, workspace, local={"base_url": "http://127.0.0.1:9/v1"})
    async with app.run_test(size=(120, 40)) as pilot:
        await app.ready()
        await app.submit("/model local:llama")
        await pilot.pause()
        assert app.status_panel.status.hint == ""
        await app.submit("/model openai:gpt-4.1")
        await pilot.pause()
        assert "MY_KEY" in app.status_panel.status.hint
        notices = [n.text for n in app.transcript.query(NoticeLine)]
        assert sum("MY_KEY" in n for n in notices) == 2, "at start and after the switch"
