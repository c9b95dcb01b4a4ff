"""What the status panel says of cost and cache ($1, $2): the cache's reads and writes once the
provider reports any, `~` on a cost priced from the built-in table, and the markers of a
compaction and a rewind saying that the next call writes a new prompt cache."""

from __future__ import annotations

import yaml
from ui.tui_helpers import FIXED_NOW, quick_probes, run_turn
from waits import wait_until

from agent import events as ev
from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.markers import NEW_CACHE, marker_text

SIZE = (120, 36)


def _app(hermes_home, workspace, provider: dict) -> HermesApp:
    config = {
        "model": "scripted:test-model",
        "providers": {"scripted": {"api_key": "test", **provider}},
        "agent": {"retry_base_seconds": 0.01, "max_retries": 1},
    }
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    probes = quick_probes(now=lambda: FIXED_NOW, clock=lambda: 0.0)
    return HermesApp(load_config(), workspace=workspace, probes=probes)


async def test_the_status_panel_shows_the_prompt_caches_reads_and_writes(
    scripted_in_process, hermes_home, workspace
):
    """$1: the anthropic persona bills the cache; the panel shows what was read and written."""
    server = scripted_in_process(
        {
            "replies": [{"text": "one"}, {"text": "two"}],
            "server": {"persona": "anthropic", "extra": {"cache_min_tokens": 64}},
        }
    )
    app = _app(hermes_home, workspace, {"kind": "anthropic", "base_url": server.anthropic_base_url})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.status_panel.status.model, what="the model shown")
        assert "cache read" not in app.status_panel.text  # nothing reported yet
        await run_turn(pilot, "hello")
        await run_turn(pilot, "again")
        # The second call's usage reaches the panel as an event of its own, after the turn.
        await wait_until(
            pilot,
            lambda: (
                app.status_panel.status.cache_read_tokens > 0
                and app.status_panel.status.cache_write_tokens > 0
            ),
            what=lambda: f"the cache's reads and writes ({app.status_panel.status})",
        )
        assert "cache read " in app.status_panel.text and " write " in app.status_panel.text


async def test_a_cost_from_the_price_table_is_marked_estimated(
    scripted_in_process, hermes_home, workspace
):
    """$2: a list price from the table shows `~`; a configured or reported one does not."""
    server = scripted_in_process({"replies": []})
    app = _app(hermes_home, workspace, {"kind": "openai", "base_url": server.openai_base_url})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.status_panel.status.model, what="the model shown")
        usage = ev.UsageUpdated(10, 10, 10, 10, 0.5, 0.5, cost_source="server")
        await app.router.apply([usage])
        await wait_until(pilot, lambda: "cost $0.5000" in app.status_panel.text, what="cost")
        table = ev.UsageUpdated(
            10, 10, 20, 20, 0.25, 0.75, cost_source="table", total_cost_estimated=True
        )
        await app.router.apply([table])
        await wait_until(pilot, lambda: "cost ~$0.7500" in app.status_panel.text, what="~cost")


def test_compaction_and_rewind_markers_say_the_next_call_writes_a_new_cache():
    """$1: the request's prefix changed there; the user is told the cache starts anew."""
    assert NEW_CACHE in (marker_text("compaction", {"summarised": 4}) or "")
    rewound = marker_text("rewind", {"message": "second", "branch": "s-2"}) or ""
    assert rewound.startswith("◈ rewound to before “second”") and NEW_CACHE in rewound
    # A rewind of the code alone leaves the conversation, and its cache, as it was.
    assert NEW_CACHE not in (marker_text("rewind", {"message": "x", "code": {}}) or "")
