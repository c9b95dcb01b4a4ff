"""A minimal SSE line reader over an httpx2 response: our own hot path, not the SDK's parser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def iter_sse(response: Any) -> Iterator[tuple[str, str]]:
    """Yield (event, data) pairs; multi-line data joined with newlines; comments skipped."""
    event = ""
    data: list[str] = []
    for line in response.iter_lines():
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", []
            continue
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
        elif line.startswith("event:"):
            event = line[6:].strip()
        # ":" comments (keep-alives such as OpenRouter's) and unknown fields are ignored.
    if data:
        yield event, "\n".join(data)
