"""Reading a small YAML file the app keeps for itself (consents, project rules) as a mapping."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def read_mapping(path: Path) -> tuple[dict[str, Any], str]:
    """The file's mapping and "" (an empty one when it is missing), or an empty mapping and
    the one sentence saying why it cannot be used (unreadable, or not a YAML mapping)."""
    import yaml  # not on the start-up path

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"{path} cannot be read ({exc.strerror})"
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        problem = f"{path} is not a YAML mapping; fix it or move it away"
        log.warning("%s", problem)
        return {}, problem
    return data, ""
