"""`sandbox:` in config.yaml: the bare mode still works, a mapping adds `hide` and
`allow_read` (H9); a mistake is one sentence naming the line."""

from __future__ import annotations

import pytest

from agent.config import ConfigError, load_config
from agent.kinds import SandboxMode


@pytest.fixture
def home(tmp_path, monkeypatch):
    root = tmp_path / "user"
    app = root / ".config" / "hermes-tui"
    app.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(root))
    return app


def load(home, text: str):
    (home / "config.yaml").write_text(text)
    return load_config(home, demo=True)


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("sandbox: auto\n", SandboxMode.AUTO),
        ("sandbox: off\n", SandboxMode.OFF),
        ("sandbox: on\n", SandboxMode.ON),
        ("{}\n", SandboxMode.AUTO),
    ],
)
def test_the_bare_mode_is_still_valid(home, text, mode):
    config = load(home, text)
    assert config.sandbox == mode and config.sandbox_hide == () and config.sandbox_allow_read == ()


def test_the_mapping_takes_a_mode_hide_and_allow_read(home):
    config = load(
        home,
        "sandbox:\n  mode: on\n  hide: [~/.secrets, /srv/keys/]\n"
        "  allow_read: [~/.ssh/known_hosts]\n",
    )
    assert config.sandbox == SandboxMode.ON
    assert config.sandbox_hide == ("~/.secrets", "/srv/keys")
    assert config.sandbox_allow_read == ("~/.ssh/known_hosts",)
    assert load(home, "sandbox: {hide: [~/x]}\n").sandbox == SandboxMode.AUTO


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("sandbox: {mode: maybe}\n", "`sandbox.mode` must be one of auto, on, off, got 'maybe'"),
        (
            "sandbox: {hidden: [~/x]}\n",
            "unknown key `sandbox.hidden` (known: mode, hide, allow_read)",
        ),
        ("sandbox: {hide: ~/x}\n", "`sandbox.hide` must be a list of paths"),
        ("sandbox: {hide: [secrets]}\n", "lists 'secrets'; give a path that starts with ~/ or /"),
        ("sandbox: {hide: [/]}\n", "(and is not / itself)"),
        ("sandbox: 3\n", "`sandbox` must be auto, on or off, or a mapping"),
    ],
)
def test_a_mistake_is_one_sentence_with_its_line(home, text, said):
    with pytest.raises(ConfigError) as caught:
        load(home, text)
    assert said in str(caught.value) and "line 1" in str(caught.value)


def test_allow_read_cannot_bring_the_apps_home_back(home):
    with pytest.raises(ConfigError, match="in the app's own home; the sandbox always hides it"):
        load(home, "sandbox: {allow_read: [~/.config/hermes-tui/config.yaml]}\n")
    # A folder above it is fine: the home stays hidden (agent/tools/hiding.py).
    assert load(home, "sandbox: {allow_read: [~/.config]}\n").sandbox_allow_read == ("~/.config",)


def test_the_apps_homes_are_the_one_in_use_and_the_platform_default(home, tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = load_config(elsewhere, demo=True)
    assert config.app_homes == (elsewhere.resolve(), home.resolve())
    assert load_config(home, demo=True).app_homes == (home.resolve(),)
