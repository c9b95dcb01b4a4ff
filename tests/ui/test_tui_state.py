"""One source for each number and setting the UI shows (issue 15): the session's totals
after a resume, `ui.show_reasoning`, and the ids under `keys:`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ui.tui_helpers import quick_probes, reply, run_turn

from agent.config import ConfigError, load_config
from hermes_tui.app import HermesApp
from hermes_tui.widgets.messages import AnswerBlock
from hermes_tui.widgets.reasoning import ReasoningBlock


def rewrite_config(home: Path, **top: object) -> None:
    """Add top-level sections to the config.yaml make_app wrote."""
    path = home / "config.yaml"
    data = yaml.safe_load(path.read_text())
    data.update(top)
    path.write_text(yaml.safe_dump(data))


async def test_a_resumed_session_counts_on_from_its_stored_totals(
    make_app, scripted_in_process, hermes_home: Path
):
    server = scripted_in_process({"replies": [reply("one"), reply("two")]})
    app = make_app(server)
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    config["providers"]["scripted"]["pricing"] = {"test-model": {"input": 2.0, "output": 8.0}}
    (hermes_home / "config.yaml").write_text(yaml.safe_dump(config))
    app = HermesApp(
        load_config(),
        workspace=app.workspace,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "first")
        session_id = app.agent.session_id
        await app.run_command("/new")
        await app.resume_session(session_id)
        status = app.status_panel.status
        assert (status.input_tokens, status.output_tokens) == (1200, 80)
        await run_turn(pilot, "second")
        await app.db.flush()
        stored = await app.db.get_session(session_id)
        # Two calls of 1,200 in and 80 out: the panel says what the database holds.
        assert (stored["input_tokens"], stored["output_tokens"]) == (2400, 160)
        assert (status.input_tokens, status.output_tokens) == (2400, 160)
        assert status.cost_usd == pytest.approx(stored["estimated_cost_usd"])
        assert status.cost_usd == pytest.approx(2 * 0.00304)
        assert "in 2.4k out 160" in app.status_panel.text


async def test_show_reasoning_false_keeps_reasoning_off_the_screen(
    make_app, scripted_in_process, hermes_home: Path
):
    server = scripted_in_process(
        {"replies": [reply("The answer.", reasoning="private chain of thought")]}
    )
    app = make_app(server)
    rewrite_config(hermes_home, ui={"show_reasoning": False})
    app = HermesApp(
        load_config(),
        workspace=app.workspace,
        probes=quick_probes(),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "think about it")
        assert not app.transcript.query(ReasoningBlock)
        assert [a.source for a in app.transcript.query(AnswerBlock)] == ["The answer."]


async def test_show_reasoning_true_is_the_default_and_shows_it(make_app, scripted_in_process):
    server = scripted_in_process({"replies": [reply("The answer.", reasoning="visible thinking")]})
    app = make_app(server)
    async with app.run_test(size=(120, 40)) as pilot:
        await run_turn(pilot, "think about it")
        assert "visible thinking" in app.transcript.query_one(ReasoningBlock).text


def test_a_mistyped_key_id_is_a_config_error_naming_it_and_the_known_ids(
    make_app, hermes_home: Path
):
    make_app()
    rewrite_config(hermes_home, keys={"turn.stear": "ctrl+y"})
    with pytest.raises(ConfigError) as raised:
        HermesApp(load_config())
    message = str(raised.value)
    assert "keys.turn.stear" in message and str(hermes_home / "config.yaml") in message
    # The known ids are listed: the app's, its widgets' and its dialogs'.
    for known in ("turn.steer", "app.quit", "composer.newline", "queue.remove", "approval.yes"):
        assert known in message


def test_key_ids_of_widgets_and_dialogs_can_be_remapped(make_app, hermes_home: Path):
    make_app()
    rewrite_config(hermes_home, keys={"composer.newline": "ctrl+j", "approval.yes": "j"})
    app = HermesApp(load_config())
    assert app.keys.keys_of(next(b for b in app.BINDINGS if b.id == "app.quit")) == ["ctrl+q"]
