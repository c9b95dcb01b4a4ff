"""JSON that comes from outside the app (a model's tool arguments): parsed so that only
ValueError escapes, with one sentence (SPEC H10).

`json.loads` raises RecursionError on deeply nested input, turns `NaN` and `1e999` into
floats that no later `json.dumps` can send as valid JSON, keeps lone surrogates that fail at
the first UTF-8 encode (the store, a request), and keeps only the last of duplicate keys (an
approval could show one value while a server reads another). Each of these is refused here.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
"""Nesting of arrays and objects accepted in outside JSON; deeper is refused (no tool schema
comes close, and deeper values would recurse in every later dump, check and render)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key[:40]!r} appears twice")
        out[key] = value
    return out


def _check(value: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH and strings that are not valid Unicode (an
    explicit stack: the walk itself must not recurse)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _valid_text(item)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise ValueError(f"it is nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, inner in item.items():
                _valid_text(key)
                stack.append((inner, depth + 1))
        else:
            stack.extend((inner, depth + 1) for inner in item)


def _valid_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string in it is not valid Unicode (a lone surrogate)") from None


def loads(text: str | bytes) -> Any:
    """Parse outside JSON; raises ValueError (one sentence's worth) for anything refused."""
    try:
        value = json.loads(
            text,
            parse_constant=_no_constant,
            parse_float=_finite,
            object_pairs_hook=_unique,
        )
    except RecursionError:
        raise ValueError(f"it is nested deeper than {MAX_DEPTH} levels") from None
    except (TypeError, MemoryError) as exc:
        raise ValueError(f"it cannot be read as JSON ({type(exc).__name__})") from None
    _check(value)
    return value


def loads_object(text: str | bytes) -> dict[str, Any]:
    """Parse outside JSON that must be an object ("" is {}); raises ValueError otherwise."""
    if not text.strip():
        return {}
    value = loads(text)
    if not isinstance(value, dict):
        raise ValueError("tool arguments must be a JSON object")
    return value
