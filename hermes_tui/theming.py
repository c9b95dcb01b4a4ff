"""Themes as files (U4): `themes/*.yaml` and `$HERMES_TUI_HOME/themes/*.yaml` -> Textual themes.

A theme file looks like this (every colour is checked; a bad file is skipped, not fatal)::

    name: hermes-dark
    dark: true
    colors: {primary: "#0178D4", background: "#121212", ...}
    hermes: {reasoning: "#8a8f98", tool: "#a0a4ab", marker: "#ffa62b", warning: "#ffa62b"}
    variables: {footer-key-foreground: "#ffa62b"}   # optional Textual variables
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from agent.config import ConfigError
from hermes_tui.safe_text import safe_text
from hermes_tui.textual_compat import add_line_filter, plain_no_color, refresh_ansi_theme
from hermes_tui.ui_config import save_ui_theme
from storage.files import PRIVATE_FILE_MODE, atomic_write, private_dir

if TYPE_CHECKING:
    from agent.config import Config
    from hermes_tui.ui_config import UISettings

DEFAULT_THEME = "hermes-dark"
COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "warning",
    "error",
    "success",
)
HERMES_KEYS = ("reasoning", "tool", "marker", "warning")
"""Our own colours; app.tcss reads them as `$hermes-reasoning`, `$hermes-tool`, ..."""
TOP_KEYS = ("name", "dark", "colors", "hermes", "variables")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def hermes_variable(key: str) -> str:
    """The CSS variable name of one of our colours: `reasoning` -> `hermes-reasoning`."""
    return f"hermes-{key}"


@dataclass(frozen=True)
class ThemeProblem:
    """Why a theme file was skipped: the file, the key and the value at fault."""

    path: Path
    key: str
    value: Any
    reason: str

    @property
    def message(self) -> str:
        """One sentence naming the file, the key and the value."""
        return (
            f"Theme file {self.path}: `{self.key}` = {self.value!r} {self.reason}; "
            "the theme was skipped."
        )


class ThemeFileError(Exception):
    """A theme file that cannot become a Theme; carries the ThemeProblem."""

    def __init__(self, problem: ThemeProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass
class ThemeCatalog:
    """Every theme that loaded (user themes override built-ins) and every file that did not."""

    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[ThemeProblem] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Theme names, sorted."""
        return sorted(self.themes)


def builtin_theme_dir() -> Path:
    """The `themes/` package that ships with hermes-tui."""
    import themes  # a plain package: cheaper than importlib.resources on the start-up path

    return Path(themes.__file__).parent


def user_theme_dir(home: Path) -> Path:
    """Where a user drops their own theme files."""
    return home / "themes"


CACHE_VERSION = 1
"""Bump when the cached form of a theme changes."""


def theme_cache_path(home: Path) -> Path:
    """Where the parsed themes are cached between starts."""
    return home / "cache" / "themes.json"


def load_themes(home: Path | None) -> ThemeCatalog:
    """Load the built-in themes, then the user's (same name wins), collecting bad files.

    The validated themes are cached in `theme_cache_path(home)`, keyed by every file's path,
    size and modification time: an unchanged set of files is read back from JSON, so PyYAML
    stays off the way to the first frame. Any change, or any bad file, means a full parse.
    """
    catalog = ThemeCatalog()
    folders = [builtin_theme_dir()]
    if home is not None:
        folders.append(user_theme_dir(home))
    paths = [
        path for folder in folders if folder.is_dir() for path in sorted(folder.glob("*.yaml"))
    ]
    stamp = _stamp(paths)
    cache = theme_cache_path(home) if home is not None else None
    cached = _read_cache(cache, stamp) if cache is not None and stamp is not None else None
    if cached is not None:
        for data in cached:
            catalog.themes[data["name"]] = theme_from_data(data)
        return catalog
    parsed = []
    for path in paths:
        try:
            data = read_theme_file(path)
        except ThemeFileError as exc:
            catalog.problems.append(exc.problem)
            continue
        parsed.append(data)
        catalog.themes[data["name"]] = theme_from_data(data)
    if cache is not None and stamp is not None and not catalog.problems:
        # Bad files are not cached: their notice must come back on every start until fixed.
        _write_cache(cache, stamp, parsed)
    return catalog


def _stamp(paths: list[Path]) -> list[list[Any]] | None:
    try:
        return [[str(path), st.st_size, st.st_mtime_ns] for path in paths for st in [path.stat()]]
    except OSError:
        return None


def _read_cache(cache: Path, stamp: list[list[Any]]) -> list[dict[str, Any]] | None:
    """The cached themes if the cache was written for exactly these files, else None."""
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data["version"] != CACHE_VERSION or data["files"] != stamp:
            return None
        themes: list[dict[str, Any]] = data["themes"]
        if not all(isinstance(theme, dict) and isinstance(theme["name"], str) for theme in themes):
            return None
        return themes
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, unreadable or not ours: parse the files instead


def _write_cache(cache: Path, stamp: list[list[Any]], themes: list[dict[str, Any]]) -> None:
    payload = json.dumps({"version": CACHE_VERSION, "files": stamp, "themes": themes})
    try:
        private_dir(cache.parent)
        atomic_write(cache, payload, mode=PRIVATE_FILE_MODE)  # a reader never sees half a file
    except OSError:
        pass  # a cache that cannot be written only costs the next start a parse


def theme_from_data(data: dict[str, Any]) -> Theme:
    """A Textual theme from the validated form `read_theme_file` returns."""
    theme = Theme(
        name=data["name"],
        dark=data["dark"],
        **data["colors"],
        variables=dict(data["variables"]),
    )
    if not sets_own_colours(theme):
        # Deriving means generating the theme's whole colour system: only when needed.
        theme.variables = {**derived_variables(theme), **theme.variables}
    return theme


def sets_own_colours(theme: Theme) -> bool:
    """Whether the theme sets every one of our colours itself (nothing to derive)."""
    return all(hermes_variable(key) in theme.variables for key in HERMES_KEYS)


def read_theme_file(path: Path) -> dict[str, Any]:
    """One theme file, validated, as plain data: name, dark, colors and variables.

    Raises ThemeFileError naming the file, the key and the value at fault.
    """

    def fail(key: str, value: Any, reason: str) -> ThemeFileError:
        return ThemeFileError(ThemeProblem(path, key, value, reason))

    raw = _load_yaml(path, fail)
    for key in raw:
        if key not in TOP_KEYS:
            raise fail(str(key), raw[key], f"is not a theme key (known: {', '.join(TOP_KEYS)})")
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("name", name, "must be lower-case letters, digits and dashes")
    dark = raw.get("dark", True)
    if not isinstance(dark, bool):
        raise fail("dark", dark, "must be true or false")
    colors = _section(raw, "colors", fail)
    hermes = _section(raw, "hermes", fail)
    variables = _section(raw, "variables", fail)
    _check_colors(colors, hermes, fail)
    _check_variables(variables, fail)
    return {
        "name": name,
        "dark": dark,
        "colors": {str(key): str(value) for key, value in colors.items()},
        "variables": {
            **{str(key): value for key, value in variables.items()},
            **{hermes_variable(str(key)): str(value) for key, value in hermes.items()},
        },
    }


def _load_yaml(path: Path, fail: Any) -> dict[str, Any]:
    """The file's top-level mapping (libyaml's loader when PyYAML has it)."""
    import yaml

    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except OSError as exc:
        raise fail("(file)", str(path), f"cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(file)"
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise fail(where, problem, "is broken YAML") from None
    if not isinstance(raw, dict):
        raise fail("(top level)", raw, "must be a mapping")
    return raw


def _check_colors(colors: dict[str, Any], hermes: dict[str, Any], fail: Any) -> None:
    """Textual's colour keys (primary required) and ours, every value a colour."""
    if "primary" not in colors:
        raise fail("colors.primary", None, "is required")
    for key, value in colors.items():
        if key not in COLOR_KEYS:
            raise fail(
                f"colors.{key}", value, f"is not a colour key (known: {', '.join(COLOR_KEYS)})"
            )
        _check_color(f"colors.{key}", value, fail)
    for key, value in hermes.items():
        if key not in HERMES_KEYS:
            raise fail(f"hermes.{key}", value, f"is not ours (known: {', '.join(HERMES_KEYS)})")
        _check_color(f"hermes.{key}", value, fail)


def _check_variables(variables: dict[str, Any], fail: Any) -> None:
    """Textual variables: strings, colours but for the text styles."""
    for key, value in variables.items():
        if not isinstance(value, str):
            raise fail(f"variables.{key}", value, "must be a string")
        if not str(key).endswith("text-style"):
            _check_color(f"variables.{key}", value, fail)


def _section(raw: dict[str, Any], key: str, fail: Any) -> dict[str, Any]:
    body = raw.get(key) or {}
    if not isinstance(body, dict):
        raise fail(key, body, "must be a mapping")
    return body


def _check_color(key: str, value: Any, fail: Any) -> None:
    if not isinstance(value, str):
        raise fail(key, value, "is not a colour (use #rrggbb or a colour name)")
    try:
        Color.parse(value)
    except ColorParseError:
        raise fail(key, value, "is not a colour (use #rrggbb or a colour name)") from None


def variable_defaults(theme: Theme) -> dict[str, str]:
    """Our transcript colours for `theme` when it does not set them (App's CSS defaults)."""
    return {} if sets_own_colours(theme) else derived_variables(theme)


def derived_variables(theme: Theme) -> dict[str, str]:
    """Our colours for a theme that does not set them, taken from its own palette."""
    system = theme.to_color_system().generate()
    return {
        hermes_variable("reasoning"): system["text-muted"],
        hermes_variable("tool"): system["text-muted"],
        hermes_variable("marker"): system["accent"],
        hermes_variable("warning"): system["text-warning"],
    }


class ThemeSettings(Protocol):
    """Where the themes' settings come from: the config (its home and file, read when
    used) and the front end's `ui:` settings (the theme to start in)."""

    config: Config
    ui_settings: UISettings


class AppThemes:
    """The app's themes: ours only, the configured one from the first frame, a switch saved.

    A switch from /theme or the command palette is remembered as `ui.theme` in config.yaml.
    """

    def __init__(self, app: App[Any], settings: ThemeSettings) -> None:
        # The Textual app whose themes these are (its whole theme machinery is used).
        self.app = app
        self.settings = settings
        self._saved = settings.ui_settings.theme

    def attach(self) -> None:
        """Once mounted: remember every theme switch, and on a 256-colour terminal show each
        colour as its nearest palette entry (headless runs and snapshots stay truecolour)."""
        app = self.app
        app.theme_changed_signal.subscribe(app, self.remember)
        if app.no_color:
            plain_no_color(app)  # NO_COLOR: no colour codes at all, whatever the theme
        elif not app.is_headless and app.console.color_system == "256":
            from hermes_tui.palette256 import Nearest256

            add_line_filter(app, Nearest256())

    @property
    def current(self) -> str:
        """The theme shown now."""
        return self.app.theme

    def names(self) -> list[str]:
        """The installed themes, sorted."""
        return sorted(self.app.available_themes)

    def install(self, catalog: ThemeCatalog) -> list[str]:
        """Make our themes the only ones and apply the configured one; returns notices."""
        app = self.app
        notices = [problem.message for problem in catalog.problems]
        for theme in catalog.themes.values():
            app.register_theme(theme)
        wanted = self.settings.ui_settings.theme
        if wanted not in catalog.themes:
            config_path = self.settings.config.config_path
            notices.append(
                f"Theme {wanted!r} (ui.theme in {config_path}) is not installed; "
                f"using {DEFAULT_THEME}. /theme lists the themes."
            )
            wanted = DEFAULT_THEME if DEFAULT_THEME in catalog.themes else app.theme
        self._start_in(wanted)
        for name in list(app.available_themes):
            if name not in catalog.themes and name != wanted:
                app.unregister_theme(name)
        return notices

    def _start_in(self, name: str) -> None:
        """Start in `name`, doing what setting `theme` does but for the CSS refresh it queues.

        The stylesheet is not parsed yet, so giving it this theme's variables now is enough.
        Setting `theme` instead would queue a refresh that parses all the CSS a second time
        and restyles every widget before the first frame (a fifth of the time to it).
        """
        app = self.app
        app.set_reactive(App.theme, name)
        dark = app.current_theme.dark
        for old in [c for c in app.classes if c.startswith("-theme-")]:
            app.remove_class(old, update=False)
        app.add_class(f"-theme-{name}", update=False)
        app.set_class(dark, "-dark-mode", update=False)
        app.set_class(not dark, "-light-mode", update=False)
        refresh_ansi_theme(app)
        app.stylesheet.set_variables(app.get_css_variables())

    def switch(self, name: str) -> bool:
        """Show theme `name` and remember it; False when it could not be saved."""
        self.app.theme = name
        return self.remember(self.app.current_theme)

    def remember(self, theme: Theme) -> bool:
        """Save a newly chosen theme (from /theme or the palette) as `ui.theme`."""
        if theme.name == self._saved:
            return True
        try:
            save_ui_theme(self.settings.config.home, theme.name)
        except (OSError, ConfigError) as exc:
            # The reason names a path: shown as text, never as markup.
            reason = safe_text(str(exc))
            self.app.notify(
                f"The theme could not be saved: {reason}", severity="warning", markup=False
            )
            return False
        self._saved = theme.name
        return True
