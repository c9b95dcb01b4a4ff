"""Raw reply bytes for hostile-stream tests: the `raw_sse` reply key, sent verbatim.

`raw_sse` is a list of pieces sent in order as the streamed body, on either wire: a string
(sent as UTF-8) or `{repeat: "x", times: N}` (the string N times over). Repeats are sent in
chunks of about CHUNK bytes, so a 50 MB line never sits in the server's memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CHUNK = 64 * 1024


def check_pieces(raw: Any) -> tuple[str | dict[str, Any], ...]:
    """Validate a `raw_sse` value; returns it as a tuple or raises ValueError."""
    if not isinstance(raw, list | tuple):
        raise ValueError(f"raw_sse must be a list of pieces, got {raw!r}")
    for piece in raw:
        if isinstance(piece, str):
            continue
        if (
            not isinstance(piece, dict)
            or set(piece) != {"repeat", "times"}
            or not isinstance(piece["repeat"], str)
            or not piece["repeat"]
            or not isinstance(piece["times"], int)
            or piece["times"] < 0
        ):
            raise ValueError(f"bad raw_sse piece {piece!r}: a string or {{repeat: str, times: N}}")
    return tuple(raw)


def raw_chunks(pieces: tuple[str | dict[str, Any], ...]) -> Iterator[bytes]:
    """The body bytes of `pieces`, a repeat cut into chunks of about CHUNK bytes."""
    for piece in pieces:
        if isinstance(piece, str):
            if piece:
                yield piece.encode("utf-8")
            continue
        unit = piece["repeat"].encode("utf-8")
        per_chunk = max(CHUNK // len(unit), 1)
        left = piece["times"]
        block = unit * min(per_chunk, left)
        while left >= per_chunk:
            yield block
            left -= per_chunk
        if left:
            yield unit * left
