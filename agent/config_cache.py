"""The checked form of config.yaml, kept between starts so an unchanged file is not checked again.

Checking the file needs pydantic (its import and the validator cost about half a second), yet
the result depends only on the file's bytes and on the code that checks them. So the cache in
`$HERMES_TUI_HOME/cache/config.json` is keyed by the sha256 of the file, the app's version,
pydantic's installed version and a fingerprint of the modules that declare and check the
settings; it holds the file's YAML tree (lines kept, so PyYAML stays unloaded too) and the
checked sections as plain JSON. Only the file's text is in it: the environment (providers it
implies, `api_key_env`, `${VAR}`) and the file system (`sandbox.allow_read`) are read by the
loader on every start. A mistake is never stored, so its sentence comes back on every start.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

from agent.config_check import bare_type, type_hints
from agent.config_source import LineMapping
from agent.version import VERSION
from storage.files import PRIVATE_FILE_MODE, atomic_write, private_dir

CACHE_VERSION = 1
"""Bump when the cached form changes."""
SCHEMA_MODULES = (
    "agent.config",
    "agent.config_cache",
    "agent.config_check",
    "agent.config_source",
    "agent.credentials",
    "agent.kinds",
    "agent.mcp.settings",
    "agent.pricing",
)
"""Every module whose code decides what a file checks into: the sections, their types and
markers, the converters and the checks (a change to any of them means a fresh check)."""


class _NotJson(Exception):
    """A YAML value JSON cannot hold as it is (a date, a key that is not text)."""


def config_cache_path(home: Path) -> Path:
    """Where the checked config is cached between starts."""
    return home / "cache" / "config.json"


def cache_key(source: bytes) -> str | None:
    """What a cached check must have been made for; None when the code cannot be read."""
    try:
        schema = b"".join(
            Path(sys.modules[name].__file__ or "").read_bytes() for name in SCHEMA_MODULES
        )
    except (KeyError, OSError):
        return None  # not loaded from files (frozen, zipped): check every time
    parts = [
        str(CACHE_VERSION),
        hashlib.sha256(source).hexdigest(),
        VERSION,
        _pydantic_version(),
        hashlib.sha256(schema).hexdigest(),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _pydantic_version() -> str:
    """pydantic's and pydantic-core's installed versions, found without importing them (their
    dist-info folders: importlib.metadata alone costs tens of milliseconds)."""
    spec = importlib.util.find_spec("pydantic")
    if spec is None or spec.origin is None:
        return "none"
    package = Path(spec.origin).parent
    found = sorted(
        entry.name
        for prefix in ("pydantic-", "pydantic_core-")
        for entry in package.parent.glob(f"{prefix}*.dist-info")
    )
    if found:
        return " ".join(found)
    try:  # installed without metadata: the file that spells the version
        return hashlib.sha256((package / "version.py").read_bytes()).hexdigest()
    except OSError:
        return "unknown"


def read_cache(cache: Path, key: str, cls: type) -> tuple[dict[str, Any] | None, Any] | None:
    """(the file's tree, or None if it was not cacheable; the checked `cls`) stored for `key`,
    else None: missing, stale, corrupt or not ours means a fresh check."""
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if stored["version"] != CACHE_VERSION or stored["key"] != key:
            return None
        raw = None if stored["raw"] is None else _decoded(stored["raw"])
        if raw is not None and not isinstance(raw, dict):
            return None
        return raw, from_data(cls, stored["checked"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def write_cache(cache: Path, key: str, raw: dict[str, Any], checked: Any) -> None:
    """Store the tree and the checked sections of a file that passed, atomically and private."""
    try:
        tree = _encoded(raw)
    except _NotJson:
        tree = None  # a hit parses the YAML again, but still skips the check
    payload = json.dumps(
        {"version": CACHE_VERSION, "key": key, "raw": tree, "checked": to_data(checked)}
    )
    try:
        private_dir(cache.parent)
        atomic_write(cache, payload, mode=PRIVATE_FILE_MODE)  # a reader never sees half a file
    except OSError:
        pass  # a cache that cannot be written only costs the next start a check


def to_data(value: Any) -> Any:
    """A checked value as plain JSON data (dataclasses as mappings, enums as their values)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [to_data(item) for item in value]
    return value


def from_data(hint: Any, data: Any) -> Any:
    """`to_data`'s output back as the declared `hint` (no checking: it was checked before)."""
    if data is None:
        return None
    bare = bare_type(hint)
    if dataclasses.is_dataclass(bare):
        hints = type_hints(bare)
        fields = {f.name for f in dataclasses.fields(bare)}
        if not isinstance(data, dict) or set(data) - fields:
            raise TypeError(f"not a stored {bare.__name__}")
        return bare(**{name: from_data(hints[name], item) for name, item in data.items()})
    origin = get_origin(bare)
    if origin is dict:
        return {key: from_data(get_args(bare)[1], item) for key, item in data.items()}
    if origin in (tuple, list):
        return tuple(from_data(get_args(bare)[0], item) for item in data)
    if isinstance(bare, type) and issubclass(bare, Enum):
        return bare(data)
    if bare is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data


def _encoded(value: Any) -> Any:
    """The YAML tree as JSON, every mapping with the lines of its keys; raises _NotJson."""
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _NotJson
        lines = getattr(value, "lines", None)
        return {"m": {key: _encoded(item) for key, item in value.items()}, "l": lines}
    if isinstance(value, list):
        return {"a": [_encoded(item) for item in value]}
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise _NotJson


def _decoded(value: Any) -> Any:
    """`_encoded`'s output back as the tree the YAML loader gives."""
    if isinstance(value, dict):
        if "a" in value:
            return [_decoded(item) for item in value["a"]]
        items = {key: _decoded(item) for key, item in value["m"].items()}
        lines = value["l"]
        return items if lines is None else LineMapping(items, dict(lines))
    return value
