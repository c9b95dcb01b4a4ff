"""`ui:` and `keys:` are the front end's settings (issue 28 item 2): the agent passes them
through unread, hermes_tui/ui_config.py checks them with the same sentences (file, line, key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import ConfigError, load_config
from hermes_tui.ui_config import UISettings, key_remaps, ui_settings


def config_with(home: Path, text: str):
    (home / "config.yaml").write_text(text)
    return load_config(home, demo=True)


def test_the_agent_passes_ui_and_keys_through_unread(tmp_path):
    config = config_with(tmp_path, "ui:\n  themee: x\nkeys:\n  no.such: f9\n")
    assert dict(config.ui) == {"themee": "x"} and dict(config.keys) == {"no.such": "f9"}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "ui:\n  themee: x\n",
            "line 2: unknown key `ui.themee` "
            "(known: theme, show_reasoning, notify, notify_after_seconds).",
        ),
        ("ui:\n  show_reasoning: 1\n", "line 2: `ui.show_reasoning` must be true or false, got 1."),
    ],
)
def test_a_ui_mistake_names_its_line(tmp_path, text, said):
    with pytest.raises(ConfigError) as caught:
        ui_settings(config_with(tmp_path, text))
    assert str(caught.value) == f"{tmp_path / 'config.yaml'}, {said}"


def test_ui_settings_default_and_read(tmp_path):
    assert ui_settings(config_with(tmp_path, "{}\n")) == UISettings()
    assert ui_settings(config_with(tmp_path, "ui: {theme: hermes-nord}\n")).theme == "hermes-nord"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # The line is new: the sentence used to name only the file.
        (
            "keys:\n  app.quit: f9\n  turn.stear: f8\n",
            "line 3: unknown key binding `keys.turn.stear`",
        ),
        ("keys:\n  app.quit: ' '\n", "line 2: `keys.app.quit` names no key."),
        ("keys:\n  app.quit: [f9]\n", "line 2: `keys.app.quit` must be text, got ['f9']."),
    ],
)
def test_a_keys_mistake_names_its_line(tmp_path, text, said):
    with pytest.raises(ConfigError) as caught:
        key_remaps(config_with(tmp_path, text))
    assert str(caught.value).startswith(f"{tmp_path / 'config.yaml'}, {said}")


def test_a_digit_key_is_taken_as_its_text(tmp_path):
    assert key_remaps(config_with(tmp_path, "keys:\n  app.help: 5\n")) == {"app.help": "5"}
