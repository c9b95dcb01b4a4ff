"""Markdown prompt files with YAML front matter: custom commands (P3) and agent types (G1).

Both are read the same careful way (no symlink followed, not a FIFO, a size cap, UTF-8
only) and both take a front matter of known keys between `---` lines; a file that cannot be
used raises `BrokenFile` with the reason, which the caller turns into one sentence.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 64_000
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class BrokenFile(Exception):
    """A prompt file that cannot be used; the message says why."""


def read_prompt_file(path: Path) -> str:
    """The file's text (CRLF read as LF); raises BrokenFile when it is no usable text."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise BrokenFile(f"it cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise BrokenFile("it is not a regular file")
        os.set_blocking(fd, True)
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise BrokenFile(f"it is over {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise BrokenFile("it is not UTF-8 text") from None


def split_front_matter(
    text: str, keys: tuple[str, ...], *, lists: tuple[str, ...] = ()
) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a prompt file: every value text, or for a key in `lists` a
    list of words (`[a, b]` or `a, b`); raises BrokenFile for bad front matter."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise BrokenFile("its front matter has no closing --- line")
    import yaml

    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise BrokenFile(f"its front matter is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise BrokenFile("its front matter must be a mapping, e.g. `description: ...`")
    for key, value in list(data.items()):
        if key not in keys:
            raise BrokenFile(f"unknown front matter key `{key}` (known: {', '.join(keys)})")
        if key in lists:
            data[key] = _words(key, value)
        elif not isinstance(value, str):
            raise BrokenFile(f"front matter `{key}` must be text")
    model = data.get("model")
    if model is not None and ":" not in model:
        raise BrokenFile(f"front matter `model` must be provider:model, not {model!r}")
    return data, "\n".join(lines[end + 1 :])


def _words(key: str, value: Any) -> tuple[str, ...]:
    """A list key's value as words: a YAML list of text, or one text split at commas."""
    if isinstance(value, str):
        return tuple(word for word in (w.strip() for w in value.split(",")) if word)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise BrokenFile(f"front matter `{key}` must be a list of names, e.g. `[read_file, grep]`")
