"""The checked form of config.yaml, kept between starts so an unchanged file is not checked again.

Checking the file needs pydantic (its import and the validator cost about half a second), yet
the result depends only on the file's bytes and on the code that checks them. So the cache in
`$HERMES_TUI_HOME/cache/config.json` is keyed by the sha256 of the file, the app's version
and pydantic's installed version; it holds the file's YAML tree (lines kept, so PyYAML stays
unloaded too) and each checked section as plain JSON beside a fingerprint of the source of
the modules that declare and check it (the agent's `file`, the front end's `ui` and `keys`).
Only the file's text is in it: the environment (providers it implies, `api_key_env`,
`${VAR}`) and the file system (`sandbox.allow_read`) are read by the loader on every start.
A mistake is never stored, so its sentence comes back on every start.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

from agent.config_check import bare_type, checked, type_hints
from agent.config_source import LineMapping
from agent.version import VERSION

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


def _sha256(data: bytes) -> str:
    """The sha256 of `data`, in hex; hashlib (OpenSSL's bindings, a few ms) loads only when
    there is a file to key, so a start without config.yaml draws its first frame without it."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def cache_key(source: bytes) -> str:
    """What a cached check must have been made for: these bytes, this app and this pydantic."""
    parts = [str(CACHE_VERSION), _sha256(source), VERSION, _pydantic_version()]
    return _sha256("\n".join(parts).encode())


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
        return _sha256((package / "version.py").read_bytes())
    except OSError:
        return "unknown"


def schema_fingerprint(hint: Any) -> str | None:
    """The source of every module that decides what `hint` checks into (SCHEMA_MODULES and
    the modules of its types, converters and checks), hashed; None when one cannot be read."""
    names = sorted({*SCHEMA_MODULES, *declaring_modules(hint, set())})
    try:
        return _sha256("".join(_module_digest(name) for name in names).encode())
    except (KeyError, OSError, TypeError):
        return None  # not loaded from files (frozen, zipped): check every time


@functools.cache
def _module_digest(name: str) -> str:
    file = sys.modules[name].__file__
    if file is None:
        raise TypeError(f"{name} was not loaded from a file")  # as Path(None) would
    return _sha256(Path(file).read_bytes())


def declaring_modules(hint: Any, seen: set[Any]) -> set[str]:
    """The modules of every type, converter and check reachable from `hint`."""
    found: set[str] = set()
    for marker in getattr(hint, "__metadata__", ()):
        for part in (getattr(marker, "convert", None), getattr(marker, "problem", None)):
            if part is not None:
                found.add(part.__module__)
    for arg in get_args(hint):
        found |= declaring_modules(arg, seen)
    bare = bare_type(hint)
    if isinstance(bare, type) and bare not in seen and bare.__module__ not in _PLAIN:
        seen.add(bare)
        found.add(bare.__module__)
        if dataclasses.is_dataclass(bare):
            for field_hint in type_hints(bare).values():
                found |= declaring_modules(field_hint, seen)
    return found


_PLAIN = {"builtins", "typing", "enum"}


class CheckedFile:
    """The checked sections of one config file, read from and written to its cache.

    A section is stored by name with the fingerprint of the code that checked it, so the
    front end's sections (`ui:`, `keys:`) are kept beside the agent's and go stale on their own.
    """

    def __init__(self, cache: Path, key: str, raw: Any = None, sections: Any = None) -> None:
        self.cache, self.key, self.raw = cache, key, raw
        self.sections: dict[str, Any] = dict(sections or {})

    @classmethod
    def read(cls, cache: Path, key: str) -> CheckedFile:
        """What the cache holds for `key`; empty when missing, stale, corrupt or not ours."""
        try:
            stored = json.loads(cache.read_text(encoding="utf-8"))
            if stored["version"] == CACHE_VERSION and stored["key"] == key:
                tree = None if stored["raw"] is None else _decoded(stored["raw"])
                if isinstance(tree, dict | None) and isinstance(stored["sections"], dict):
                    return cls(cache, key, stored["raw"], stored["sections"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            pass
        return cls(cache, key)

    def get(self, name: str, hint: Any) -> Any:
        """Section `name` as a `hint`, if it was checked by the same code; else None."""
        entry = self.sections.get(name)
        try:
            if entry is None or entry["code"] != schema_fingerprint(hint):
                return None
            return from_data(hint, entry["data"])
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            return None  # not the shape it should be: check it again

    def put(self, name: str, hint: Any, value: Any, raw: dict[str, Any] | None = None) -> None:
        """Store a section that passed its check (never a mistake), and write the cache."""
        code = schema_fingerprint(hint)
        if code is None:
            return
        if raw is not None:
            try:
                self.raw = _encoded(raw)
            except _NotJson:
                self.raw = None  # a hit parses the YAML again, but still skips the check
        self.sections[name] = {"code": code, "data": to_data(value)}
        self._write()

    def _write(self) -> None:
        # Here, not at the top: the storage package costs a hit a tenth of a second it need not pay.
        from storage.files import PRIVATE_FILE_MODE, atomic_write, private_dir

        payload = {"version": CACHE_VERSION, "key": self.key, "raw": self.raw}
        text = json.dumps({**payload, "sections": self.sections})
        try:
            private_dir(self.cache.parent)
            atomic_write(self.cache, text, mode=PRIVATE_FILE_MODE)  # never half a file
        except OSError:
            pass  # a cache that cannot be written only costs the next start a check

    def tree(self) -> dict[str, Any] | None:
        """The file's YAML tree (lines kept), if the cache holds it."""
        try:
            return _decoded(self.raw) if self.raw is not None else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def checked_section(
    file: CheckedFile | None, name: str, hint: Any, data: Any, *, path: Path, at: Sequence[str]
) -> Any:
    """`checked(hint, data, ...)`, from `file`'s cache when this very text was checked before."""
    found = file.get(name, hint) if file is not None else None
    if found is not None:
        return found
    value = checked(hint, data, path=path, at=at)
    if file is not None:
        file.put(name, hint, value)
    return value


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
    if isinstance(bare, type) and dataclasses.is_dataclass(bare):  # a class, never an instance
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
