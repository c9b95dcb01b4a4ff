"""The front end's settings: `ui:` and `keys:` in config.yaml, checked here, and the theme writer.

The agent passes both sections through unread (agent/config.py); they are declared and checked
here, with the same sentences (file, line, key) as every other setting.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

from agent.config import Config, ConfigError
from agent.config_cache import checked_section
from agent.config_check import Before, Check, scalar_text, settings
from agent.config_source import where
from hermes_tui.notify import NotifyMode


@settings
class UISettings:
    """The `ui:` section."""

    theme: str = "hermes-dark"
    show_reasoning: bool = True
    notify: NotifyMode = NotifyMode.BELL
    """How a turn's end, failure or approval is told when the terminal is not focused."""
    notify_after_seconds: float = 30.0
    """Told even with the terminal focused after a turn this long."""


def _no_key(key: str) -> str | None:
    return None if key.strip() else "names no key"


KeyText = Annotated[str, Before(scalar_text), Check(_no_key)]


def ui_settings(config: Config) -> UISettings:
    """`ui:` of `config`'s file, checked: a mistake is a ConfigError naming its line."""
    if not config.ui:
        return UISettings()
    file, path = config.checked_file, config.config_path
    settings: UISettings = checked_section(file, "ui", UISettings, config.ui, path=path, at=("ui",))
    return settings


def key_remaps(config: Config) -> dict[str, str]:
    """`keys:` of `config`'s file (binding id -> keys), every id checked against the app's."""
    from hermes_tui.keys import known_binding_ids

    if not config.keys:
        return {}
    file, path = config.checked_file, config.config_path
    remaps: dict[str, str] = checked_section(
        file, "keys", dict[str, KeyText], config.keys, path=path, at=("keys",)
    )
    known = known_binding_ids()
    for binding_id in remaps:
        if binding_id not in known:
            raise ConfigError(
                f"{where(config.config_path, config.keys, (binding_id,))}: unknown key binding "
                f"`keys.{binding_id}` (known: {', '.join(sorted(known))})."
            )
    return remaps


def save_ui_theme(home: Path, name: str) -> None:
    """Remember the chosen theme: set only `ui.theme` in config.yaml, keeping the rest as is."""
    import yaml

    path = home / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    before = yaml.safe_load(text) or {}
    if not isinstance(before, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings.")
    ui = before.get("ui") or {}
    expected = {**before, "ui": {**(ui if isinstance(ui, dict) else {}), "theme": name}}
    updated = _with_ui_theme(text, name)
    if yaml.safe_load(updated) != expected:
        # An unusual layout (flow style, anchors): keep the data, lose the formatting.
        updated = yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)
    from storage.files import atomic_write, private_dir

    private_dir(home)
    # Atomic and fsynced; the file keeps its mode (a 0600 config stays 0600; a new one is 0600).
    atomic_write(path, updated)


def _with_ui_theme(text: str, name: str) -> str:
    """`text` with `ui.theme` set by editing lines, so comments and order survive."""
    import yaml

    value = name if yaml.safe_load(name) == name else json.dumps(name)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^ui:\s*(#.*)?$", line)), None)
    if start is None:
        tail = "" if not text or text.endswith("\n") else "\n"
        return f"{text}{tail}ui:\n  theme: {value}\n"
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t", "#")):
        end += 1
    children = [line for line in lines[start + 1 : end] if line.strip()[:1] not in ("", "#")]
    lead = re.match(r"^\s*", children[0]) if children else None  # it always matches
    indent = lead.group(0) if lead is not None else "  "
    for i in range(start + 1, end):
        if re.match(rf"^{re.escape(indent)}theme\s*:", lines[i]):
            lines[i] = f"{indent}theme: {value}"
            break
    else:
        lines.insert(start + 1, f"{indent}theme: {value}")
    return "\n".join(lines) + "\n"
