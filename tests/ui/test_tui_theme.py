"""Themes (U4): built-ins and user files, validation notices, /theme, the palette, persistence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from textual.filter import ANSIToTruecolor
from ui.tui_helpers import quick_probes
from waits import wait_until

from agent.config import load_config
from hermes_tui.app import HermesApp
from hermes_tui.theming import (
    DEFAULT_THEME,
    HERMES_KEYS,
    builtin_theme_dir,
    hermes_variable,
    load_themes,
    read_theme_file,
    theme_cache_path,
)
from hermes_tui.ui_config import save_ui_theme, ui_settings
from hermes_tui.widgets.messages import NoticeLine


def notices(app: HermesApp) -> list[str]:
    """The transcript's notice lines."""
    return [line.text for line in app.transcript.query(NoticeLine)]


def test_builtin_themes_load_with_our_variables():
    catalog = load_themes(None)
    assert catalog.problems == []
    assert len(catalog.themes) >= 6
    assert {DEFAULT_THEME, "hermes-light", "hermes-high-contrast"} <= set(catalog.themes)
    assert catalog.themes["hermes-light"].dark is False
    for theme in catalog.themes.values():
        for key in HERMES_KEYS:
            assert hermes_variable(key) in theme.variables, (theme.name, key)
    files = sorted(path.stem for path in builtin_theme_dir().glob("*.yaml"))
    assert files == catalog.names


def test_a_bad_theme_names_the_file_the_key_and_the_value(hermes_home: Path):
    folder = hermes_home / "themes"
    folder.mkdir()
    bad = folder / "broken.yaml"
    bad.write_text("name: broken\ncolors:\n  primary: '#0178D4'\n  background: notacolour\n")
    (folder / "mine.yaml").write_text("name: mine\ncolors:\n  primary: '#ff00ff'\n")
    catalog = load_themes(hermes_home)
    [problem] = catalog.problems
    assert (problem.path, problem.key, problem.value) == (bad, "colors.background", "notacolour")
    assert str(bad) in problem.message and "colors.background" in problem.message
    assert "'notacolour'" in problem.message
    # A user theme without our colours gets them from its own palette.
    mine = catalog.themes["mine"]
    assert all(hermes_variable(key) in mine.variables for key in HERMES_KEYS)


def test_theme_file_validation_rejects_unknown_keys_and_bad_types(tmp_path: Path):
    cases = {
        "typo.yaml": ("colours: {}\n", "colours"),
        "ours.yaml": (
            "colors: {primary: '#fff'}\nhermes: {reasonning: '#fff'}\n",
            "hermes.reasonning",
        ),
        "dark.yaml": ("colors: {primary: '#fff'}\ndark: maybe\n", "dark"),
        "none.yaml": ("colors:\n  primary: #fff\n", "colors.primary"),
        "missing.yaml": ("colors: {accent: '#fff'}\n", "colors.primary"),
        "yaml.yaml": ("colors: [\n", "line 2"),
    }
    for name, (text, key) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        try:
            read_theme_file(path)
        except Exception as exc:  # ThemeFileError
            assert exc.problem.key == key, (name, exc.problem)
        else:
            raise AssertionError(f"{name} loaded")


async def test_the_app_starts_with_a_broken_theme_and_says_why(make_app, hermes_home: Path):
    folder = hermes_home / "themes"
    folder.mkdir()
    (folder / "broken.yaml").write_text("colors:\n  primary: '#0178D4'\n  error: 12\n")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await pilot.pause()
        assert app.theme == DEFAULT_THEME
        [notice] = [text for text in notices(app) if "broken.yaml" in text]
        assert "colors.error" in notice and "12" in notice


async def test_theme_command_switches_and_remembers_only_ui_theme(make_app, hermes_home: Path):
    app = make_app()
    config = hermes_home / "config.yaml"
    original = "# my settings\n" + config.read_text() + "keys:\n  app.help: f10  # mine\n"
    config.write_text(original)
    app.config = load_config()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.submit("/theme")
        assert "hermes-high-contrast" in notices(app)[-1]
        await app.submit("/theme nope")
        assert "No theme called 'nope'" in notices(app)[-1]
        await app.submit("/theme hermes-light")
        await pilot.pause()
        assert app.theme == "hermes-light"
        light = load_themes(None).themes["hermes-light"]
        assert app.theme_variables["hermes-reasoning"] == light.variables["hermes-reasoning"]
    text = config.read_text()
    assert text.startswith(original) or text.replace("ui:\n  theme: hermes-light\n", "") == original
    assert "# my settings" in text and "app.help: f10  # mine" in text
    assert ui_settings(load_config()).theme == "hermes-light"
    restarted = HermesApp(
        load_config(),
        probes=quick_probes(),
    )
    async with restarted.run_test(size=(120, 36)):
        assert restarted.theme == "hermes-light"


@pytest.mark.parametrize("theme", ["hermes-light", "hermes-high-contrast"])
async def test_starting_in_a_theme_paints_what_switching_to_it_paints(
    make_app, hermes_home: Path, theme: str
):
    """The configured theme is applied before the CSS is first parsed (no second parse at
    start-up): the first frame must still be exactly the switched-to theme's."""

    async def screenshot(app: HermesApp, switch_to: str | None) -> str:
        async with app.run_test(size=(100, 30)) as pilot:
            await app.ready()
            if switch_to:
                app.theme = switch_to
            await pilot.pause()
            assert app.theme == theme
            assert app.has_class(f"-theme-{theme}") and app.has_class("-light-mode") == (
                theme == "hermes-light"
            )
            # ANSI colours map through the palette of the theme's kind (light or dark).
            [to_truecolor] = [f for f in app._filters if isinstance(f, ANSIToTruecolor)]
            assert to_truecolor._terminal_theme is app.ansi_theme
            return app.export_screenshot(simplify=True)

    switched = await screenshot(make_app(), theme)
    fresh = make_app()  # writes the config the first one had ...
    save_ui_theme(hermes_home, theme)  # ... plus the theme, read at start
    fresh.config = load_config()
    started = await screenshot(
        HermesApp(
            fresh.config,
            workspace=fresh.workspace,
            probes=quick_probes(now=fresh.probes.now, clock=fresh.probes.clock),
        ),
        None,
    )
    assert started == switched


async def test_the_palette_choice_is_remembered(make_app, hermes_home: Path):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        assert set(app.available_themes) == set(load_themes(hermes_home).themes)
        app.theme = "hermes-nord"  # what the palette's theme picker does
        await wait_until(
            pilot, lambda: ui_settings(load_config()).theme == "hermes-nord", what="saved"
        )


def test_save_ui_theme_keeps_the_rest_of_the_file(tmp_path: Path):
    config = tmp_path / "config.yaml"
    config.write_text(
        "model: demo:demo-model  # pinned\n\nui:\n    # reasoning too\n"
        "    show_reasoning: false\n    theme: hermes-dark\nagent:\n  max_iterations: 9\n"
    )
    save_ui_theme(tmp_path, "hermes-gruvbox")
    text = config.read_text()
    assert (
        "    theme: hermes-gruvbox\n" in text and "# pinned" in text and "# reasoning too" in text
    )
    data = yaml.safe_load(text)
    assert data["ui"] == {"show_reasoning": False, "theme": "hermes-gruvbox"}
    assert data["agent"] == {"max_iterations": 9}
    fresh = tmp_path / "fresh"
    save_ui_theme(fresh, "hermes-light")
    assert yaml.safe_load((fresh / "config.yaml").read_text()) == {"ui": {"theme": "hermes-light"}}
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "config.yaml").write_text("ui: {show_reasoning: true}\n")
    save_ui_theme(flow, "hermes-nord")
    data = yaml.safe_load((flow / "config.yaml").read_text())
    assert data == {"ui": {"show_reasoning": True, "theme": "hermes-nord"}}


def _user_theme(home: Path, name: str, primary: str) -> Path:
    folder = home / "themes"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "colors": {"primary": primary}}))
    return path


def test_themes_are_read_back_from_the_cache_until_a_file_changes(tmp_path: Path):
    path = _user_theme(tmp_path, "mine", "#112233")
    first = load_themes(tmp_path)
    assert first.themes["mine"].primary == "#112233"
    assert theme_cache_path(tmp_path).is_file()
    # Unchanged files: the cached form gives the same themes, and no file is parsed.
    parsed: list[Path] = []
    import hermes_tui.theming as theming

    original = theming.read_theme_file
    theming.read_theme_file = lambda p: parsed.append(p) or original(p)
    try:
        again = load_themes(tmp_path)
        assert parsed == []
        assert again.names == first.names
        for name, theme in first.themes.items():
            assert again.themes[name].to_color_system().generate() == (
                theme.to_color_system().generate()
            ), name
            assert again.themes[name].variables == theme.variables, name
        # An edited file (another size) is parsed again.
        path.write_text(yaml.safe_dump({"name": "mine", "colors": {"primary": "#445566"}}))
        changed = load_themes(tmp_path)
        assert path in parsed and changed.themes["mine"].primary == "#445566"
    finally:
        theming.read_theme_file = original


def test_a_bad_theme_is_reported_on_every_start_and_a_broken_cache_is_ignored(tmp_path: Path):
    load_themes(tmp_path)
    theme_cache_path(tmp_path).write_text("{not json")
    assert load_themes(tmp_path).problems == []  # the broken cache is ignored, then rewritten
    assert load_themes(tmp_path).names == load_themes(None).names
    bad = tmp_path / "themes"
    bad.mkdir()
    (bad / "bad.yaml").write_text("name: bad\ncolors: {primary: not-a-colour}\n")
    for _ in range(2):
        problems = load_themes(tmp_path).problems
        assert [problem.key for problem in problems] == ["colors.primary"]


def test_a_start_without_config_or_theme_changes_does_not_import_pyyaml(tmp_path: Path):
    code = (
        "import sys\n"
        "from agent.config import load_config\n"
        "from hermes_tui.app import HermesApp\n"
        "HermesApp(load_config(demo=True))\n"
        "print('yaml' in sys.modules)\n"
    )
    env = {**os.environ, "HERMES_TUI_HOME": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    # The first start parses the theme files (and caches them); the second reads the cache.
    assert runs == ["True", "False"]
