"""A config file that was checked before is read back from $HERMES_TUI_HOME/cache without
pydantic; a change, a corrupt cache or a mistake means a fresh check, and what the
environment supplies is read on every start (agent/config_cache.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest

import agent.config
import agent.config_cache
from agent.config import ConfigError, load_config
from agent.config_cache import config_cache_path, declaring_modules
from hermes_tui.ui_config import KeyText, UISettings, key_remaps, ui_settings

RICH = """\
model: local:qwen
providers:
  local:
    base_url: http://127.0.0.1:11434/v1
    api_key_env: LOCAL_KEY
    headers: {X-Team: 7}
    pricing:
      qwen: {input: 1, output: 2.5}
  claude:
    kind: anthropic
    api_keys_env: CLAUDE_KEY
agent:
  max_iterations: 200
  approval: ask
  shell_env_passthrough: [GITHUB_TOKEN]
compression: {threshold: 0.8}
sandbox:
  mode: on
  hide: [~/secrets/]
tools: {shell: {network: true}}
mcp: {tool_search: auto, call_timeout_seconds: 60}
mcp_servers:
  files: {command: mcp-files, args: [--root, ~/work]}
ui:
  theme: textual-dark
keys:
  app.quit: ctrl+q
"""


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path


@pytest.fixture
def no_check(monkeypatch):
    """Makes a fresh check fail the test: what follows must be a cache hit."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("the file was checked again")

    def arm() -> None:
        monkeypatch.setattr(agent.config, "checked", refuse)

    return arm


def write(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text)


def test_a_hit_builds_the_same_config_as_a_check(home, no_check):
    """Every section, type and line comes back as the check made it (lines: M1's sentences)."""
    write(home, RICH)
    fresh = load_config(home)
    no_check()
    again = load_config(home)
    assert again == fresh
    assert again.providers["local"].pricing == {"qwen": {"input": 1.0, "output": 2.5}}
    assert type(again.providers["local"].pricing["qwen"]["input"]) is float
    assert again.providers["local"].headers == {"X-Team": "7"}
    assert again.agent.shell_env_passthrough == ("GITHUB_TOKEN",)
    assert again.sandbox == fresh.sandbox and type(again.sandbox) is type(fresh.sandbox)
    assert again.ui.lines == fresh.ui.lines and again.keys.lines == fresh.keys.lines


def test_a_hit_does_not_import_pydantic_or_yaml(tmp_path):
    """The point of the cache: a start with a checked file reaches its first frame without
    the checker (about half a second) and without PyYAML."""
    write(tmp_path, RICH)
    code = (
        "import sys\nfrom agent.config import load_config\n"
        "from hermes_tui.ui_config import key_remaps, ui_settings\n"
        "config = load_config()\nui_settings(config)\nkey_remaps(config)\n"
        "print(config.model, 'pydantic' in sys.modules, 'yaml' in sys.modules)\n"
    )
    env = {**os.environ, "HERMES_TUI_HOME": str(tmp_path)}

    def start() -> str:
        run = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return run.stdout.strip()

    assert start() == "local:qwen True True"  # the first start checks and writes the cache
    assert start() == "local:qwen False False"


def test_the_cache_is_private(home):
    """H5: files the app writes under HERMES_TUI_HOME are 0600 in 0700 folders (the tree may
    hold an inline key, as the config itself may)."""
    write(home, RICH)
    load_config(home)
    cache = config_cache_path(home)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700


def test_a_changed_file_is_checked_again(home):
    """A mistake written after a good start is reported, on every start (M1's sentences)."""
    write(home, RICH)
    load_config(home)
    write(home, RICH.replace("max_iterations: 200", "max_iterations: 0"))
    for _ in range(2):
        with pytest.raises(
            ConfigError, match=r"line 13: `agent\.max_iterations` must be at least 1"
        ):
            load_config(home)


def test_a_mistake_is_never_cached(home):
    """A file that fails its check leaves no cache, so the next start reports it again."""
    write(home, "providers:\n  local:\n    name: other\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"unknown key `providers\.local\.name`"):
            load_config(home)
    assert not config_cache_path(home).exists()


def _damaged_copies(cache: Path) -> list[str]:
    good = json.loads(cache.read_text())
    file = good["sections"]["file"]

    def with_file(**changes) -> dict:
        data = {**file["data"], **changes}
        return {**good, "sections": {**good["sections"], "file": {**file, "data": data}}}

    wrong_shape = with_file(agent={"nope": 1})
    wrong_enum = with_file(sandbox={"mode": "sideways"})
    wrong_tree = {**good, "raw": {"m": "not a mapping"}}
    return [
        "{not json",
        cache.read_text()[:100],
        json.dumps([1, 2]),
        json.dumps(wrong_shape),
        json.dumps(wrong_enum),
        json.dumps(wrong_tree),
    ]


def test_a_corrupt_cache_is_ignored_and_rewritten(home):
    """Garbage, a truncated file or data of the wrong shape under the right key: the file is
    checked again and the cache written anew."""
    write(home, RICH)
    fresh = load_config(home)
    cache = config_cache_path(home)
    good = cache.read_text()
    for damaged in _damaged_copies(cache):
        cache.write_text(damaged)
        assert load_config(home) == fresh, damaged
        assert cache.read_text() == good


def test_a_cache_that_cannot_be_read_is_ignored(home):
    """A folder where the cache should be: the file is checked, every start."""
    write(home, RICH)
    config_cache_path(home).mkdir(parents=True)
    assert load_config(home).model == "local:qwen"
    assert load_config(home).model == "local:qwen"


def test_environment_values_are_read_fresh_on_a_hit(home, monkeypatch, no_check):
    """Only the file's text is cached: keys named by `api_key_env`, the providers the
    environment implies and the model they make valid follow the environment of each start."""
    write(home, "model: openai:gpt-4.1\nproviders:\n  local:\n    api_key_env: LOCAL_KEY\n")
    monkeypatch.setenv("LOCAL_KEY", "first")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
    first = load_config(home)
    assert first.providers["local"].resolved_key() == "first"
    assert first.providers["openai"].resolved_key() == "sk-first"
    no_check()
    monkeypatch.setenv("LOCAL_KEY", "second")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-second")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
    second = load_config(home)
    assert second.providers["local"].resolved_key() == "second"
    assert second.providers["openai"].base_url == "https://proxy.example/v1"
    assert second.providers["openai"].resolved_key() == "sk-second"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY in the environment"):
        load_config(home)


def test_a_tree_json_cannot_hold_still_skips_the_check(home, no_check):
    """A date (or a key that is not text) in `ui:` cannot go into JSON as it is: a hit reads
    the YAML again, and still does not check it."""
    write(home, "ui:\n  since: 2024-01-02\n  7: seven\n")
    fresh = load_config(home)
    no_check()
    again = load_config(home)
    assert again.ui == fresh.ui and again.ui.lines == fresh.ui.lines


@pytest.fixture
def checks(monkeypatch) -> list[int]:
    """Counts the fresh checks of the file."""
    count: list[int] = []
    real = agent.config.checked

    def counted(*args, **kwargs):
        count.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(agent.config, "checked", counted)
    return count


def _new_app_version(monkeypatch, _tmp):
    monkeypatch.setattr(agent.config_cache, "VERSION", "99.0.0")


def _new_pydantic(monkeypatch, _tmp):
    monkeypatch.setattr(agent.config_cache, "_pydantic_version", lambda: "pydantic-99.dist-info")


def _new_schema(monkeypatch, tmp):
    """A declaring module whose source changed (here: one more module, of new source)."""
    module = tmp / "sections.py"
    module.write_text("NEW = 1\n")
    monkeypatch.setitem(sys.modules, "sections_under_test", types.SimpleNamespace(__file__=module))
    monkeypatch.setattr(
        agent.config_cache,
        "SCHEMA_MODULES",
        (*agent.config_cache.SCHEMA_MODULES, "sections_under_test"),
    )


@pytest.mark.parametrize("change", [_new_app_version, _new_pydantic, _new_schema])
def test_a_cache_made_by_other_code_is_not_used(home, tmp_path, monkeypatch, checks, change):
    """Another app version, another pydantic or changed declarations check the file anew."""
    write(home, RICH)
    load_config(home)
    load_config(home)
    assert len(checks) == 1
    change(monkeypatch, tmp_path)
    load_config(home)
    load_config(home)
    assert len(checks) == 2


def test_the_fingerprint_covers_every_module_that_declares_a_setting():
    """The sections, types, converters and checks of a section are found where they are
    defined, the front end's too: a change to any of them means a fresh check."""
    found = declaring_modules(agent.config.ConfigFile, set())
    assert {"agent.config", "agent.config_check", "agent.mcp.settings", "agent.kinds"} <= found
    assert declaring_modules(UISettings, set()) == {"hermes_tui.ui_config", "hermes_tui.notify"}
    assert declaring_modules(dict[str, KeyText], set()) >= {"hermes_tui.ui_config"}


def test_the_front_ends_sections_are_cached_and_their_mistakes_are_not(home, monkeypatch):
    """`ui:` and `keys:` are checked once per file; a mistake in them comes back every start."""
    write(home, RICH)
    ui_settings(load_config(home))
    key_remaps(load_config(home))
    monkeypatch.setattr(agent.config_cache, "checked", None)  # a hit must not check
    assert ui_settings(load_config(home)).theme == "textual-dark"
    assert key_remaps(load_config(home)) == {"app.quit": "ctrl+q"}
    monkeypatch.undo()
    write(home, RICH.replace("theme: textual-dark", "show_reasoning: maybe"))
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"`ui\.show_reasoning` must be true or false"):
            ui_settings(load_config(home))
