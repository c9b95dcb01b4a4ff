"""config.yaml as read: YAML whose every mapping remembers the line of each of its keys."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class ConfigError(Exception):
    """A configuration problem, phrased as one sentence that names the file, line and key."""


class LineMapping(dict[Any, Any]):
    """A dict that knows the source line of each key (`lines`, by the key as text)."""

    def __init__(self, data: dict[Any, Any], lines: dict[str, int]) -> None:
        super().__init__(data)
        self.lines = lines


@functools.cache
def line_loader() -> type:
    """A YAML loader (libyaml's when present) that remembers the line of every mapping key.

    Built on first use: PyYAML is not imported on the way to the first frame when there is
    no config file to read (the demo, a first start).
    """
    import yaml

    # The base is chosen at run time (libyaml's loader exists only when PyYAML was built
    # with it), which no static checker can follow.
    class LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    def construct_mapping(loader: Any, node: Any) -> dict[str, Any]:
        mapping = loader.construct_mapping(node, deep=True)
        lines = {str(key_node.value): key_node.start_mark.line + 1 for key_node, _ in node.value}
        return LineMapping(mapping, lines)

    LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return LineLoader


def read_yaml(path: Path) -> dict[str, Any]:
    """The settings in `path` ({} when it does not exist); broken YAML is a ConfigError."""
    source = read_source(path)
    return {} if source is None else parse_yaml(path, source)


def read_source(path: Path) -> bytes | None:
    """The bytes of `path`, None when it does not exist; an unreadable file is a ConfigError."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None


def parse_yaml(path: Path, source: bytes) -> dict[str, Any]:
    """The settings `source` (read from `path`) holds; broken YAML is a ConfigError."""
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start + 1}); save it as UTF-8."
        ) from None
    import yaml

    try:
        data = yaml.load(text, Loader=line_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(
            f"{where}: broken YAML ({problem}); fix the file or move it away."
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings.")
    return data


def walk(data: Any, loc: Sequence[str | int]) -> tuple[Any, int | None]:
    """The value at `loc` inside `data` and the line of the deepest key on the way there."""
    line: int | None = None
    for part in loc:
        if isinstance(data, dict):
            line = getattr(data, "lines", {}).get(str(part), line)
            # JSON (what pydantic saw) turned every key into text: match keys as text.
            data = next((v for k, v in data.items() if str(k) == str(part)), None)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None, line
    return data, line


def where(path: Path, data: Any, loc: Sequence[str | int]) -> str:
    """`path, line N` for the key at `loc` inside `data` (just `path` when unknown)."""
    line = walk(data, loc)[1]
    return f"{path}, line {line}" if line else str(path)
