"""The config declared once as `@settings` dataclasses and checked by pydantic (issue 28 item 2):
every mistake is one sentence naming the file, the line and the key (M1, H5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest

from agent.config import ConfigError, load_config
from agent.config_check import AtLeast, Must, checked, settings
from agent.config_source import read_yaml


def load(home: Path, text: str):
    (home / "config.yaml").write_text(text)
    return load_config(home, demo=True)


def mistake(home: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(home, text)
    message = str(caught.value)
    assert message.startswith(f"{home / 'config.yaml'}, line "), message
    assert "\n" not in message
    return message.removeprefix(f"{home / 'config.yaml'}, ")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # Bounds name the key and the value (they said only "must be at least 1" / ">= 0").
        (
            "agent:\n  max_iterations: 0\n",
            "line 2: `agent.max_iterations` must be at least 1, got 0.",
        ),
        (
            "storage:\n  exit_wait_seconds: -1\n",
            "line 2: `storage.exit_wait_seconds` must be at least 0, got -1.",
        ),
        ("mcp:\n  turn_wait_seconds: -2\n", "line 2: `mcp.turn_wait_seconds` must be at least 0"),
        ("agent:\n  approval: maybe\n", "line 2: `agent.approval` must be one of ask, "),
        ("compression: 3\n", "line 1: `compression` must be a mapping, got 3."),
        (
            "agent:\n  retry_base_seconds: .nan\n",
            "`agent.retry_base_seconds` must be a finite number",
        ),
        (
            "tools:\n  shell:\n    netwrk: true\n",
            "line 3: unknown key `tools.shell.netwrk` (known: network, unix_sockets).",
        ),
        # Provider settings are typed too (a wrong one used to be taken as it was).
        (
            "providers:\n  p:\n    kind: grpc\n",
            "line 3: `providers.p.kind` must be one of openai, anthropic, got 'grpc'.",
        ),
        (
            "providers:\n  p:\n    context_window: big\n",
            "line 3: `providers.p.context_window` must be an integer, got 'big'.",
        ),
        ("providers:\n  p:\n    name: q\n", "line 3: unknown key `providers.p.name` (known: kind,"),
        ("providers:\n  p: 3\n", "line 2: `providers.p` must be a mapping, got 3."),
        (
            "providers:\n  p:\n    headers:\n      X-One: ok\n      X-Two: true\n",
            "line 5: `providers.p.headers.X-Two` must be text, got True.",
        ),
        ("model: 5\n", "line 1: `model` must be provider:model, got 5."),
    ],
)
def test_a_mistake_is_one_sentence_naming_file_line_and_key(tmp_path, text, said):
    assert said in mistake(tmp_path, text)


def test_a_key_is_never_echoed_even_when_it_is_the_wrong_kind(tmp_path):
    """H5: the sentence about a bad `api_key` does not show the value."""
    said = mistake(tmp_path, "providers:\n  p:\n    api_key: [sk-live-0123456789abcdef]\n")
    assert "`providers.p.api_key` must be a string; quote it." in said
    assert "0123456789" not in said


def test_a_setting_left_empty_means_its_default(tmp_path):
    config = load(tmp_path, "agent:\n  max_iterations:\nstorage:\ntools:\n  shell:\n")
    assert config.agent.max_iterations == 500 and config.storage.lock_timeout_seconds == 5.0


def test_values_become_their_declared_types(tmp_path):
    config = load(
        tmp_path,
        "agent: {approval: yolo, stall_timeout_seconds: 5}\n"
        "providers:\n  p: {kind: anthropic, api_keys_env: ONE, headers: {X-N: 7}}\n",
    )
    assert config.agent.stall_timeout_seconds == 5.0 and config.agent.approval == "yolo"
    provider = config.providers["p"]
    assert provider.name == "p" and provider.kind == "anthropic"
    assert provider.api_keys_env == ("ONE",) and provider.headers == {"X-N": "7"}


def test_a_setting_is_one_line_of_a_settings_dataclass(tmp_path):
    """How a new setting is added: one annotated line; the checker needs nothing more."""

    @settings
    class Section:
        limit_mb: Annotated[float, AtLeast(1), Must("be a size in MB")] = 8.0
        name: str = "x"

    path = tmp_path / "config.yaml"
    path.write_text("section:\n  limit_mb: 2\n")
    assert checked(Section, read_yaml(path)["section"], path=path, at=("section",)) == Section(2.0)
    path.write_text("section:\n  name: y\n  limit_mb: lots\n")
    with pytest.raises(ConfigError) as caught:
        checked(Section, read_yaml(path)["section"], path=path, at=("section",))
    assert (
        str(caught.value) == f"{path}, line 3: `section.limit_mb` must be a size in MB, got 'lots'."
    )


def test_a_start_without_a_config_file_does_not_import_pydantic(tmp_path):
    """The checker loads only when there is a file to check: the demo and a first start reach
    their first frame without pydantic (bench startup)."""
    code = (
        "import sys\nfrom agent.config import load_config\n"
        "load_config()\nprint('pydantic' in sys.modules)\n"
    )
    env = {**os.environ, "HERMES_TUI_HOME": str(tmp_path)}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        env.pop(name, None)
    run = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert run.stdout.strip() == "False"
