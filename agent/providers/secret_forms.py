"""The encodings a key can leave in: base64 (each alignment), hex and percent-encoding (H9).

Redaction is not a wall (the sandbox is: agent/tools/hiding.py): a tool that prints a file
in base64 or hex would carry a key past a plain search. So a known key is also searched for
as it reads in each of these, a cheap defence in depth.

base64 turns 3 bytes into 4 characters, so a key inside a larger blob reads differently
depending on where it starts (at byte 0, 1 or 2 of a group), and the characters at its two
ends mix its bits with its neighbours'. For each alignment the form kept is the run of
characters made of the key's bits alone, in both alphabets (standard and URL-safe).
"""

from __future__ import annotations

import base64
import functools
from urllib.parse import quote, quote_plus


@functools.lru_cache(maxsize=1024)
def encoded_forms(secret: str, shortest: int) -> tuple[str, ...]:
    """Every other spelling of `secret` a tool's output may carry, at least `shortest` long."""
    raw = secret.encode("utf-8")
    forms: list[str] = []
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + raw).decode("ascii")
        # Characters wholly inside the key: from ceil(8*lead/6) to floor(8*(lead+n)/6).
        stable = encoded[-(-8 * lead // 6) : 8 * (lead + len(raw)) // 6]
        forms += [stable, stable.replace("+", "-").replace("/", "_")]
    forms += [raw.hex(), raw.hex().upper(), quote(secret, safe=""), quote_plus(secret, safe="")]
    kept = (form for form in forms if len(form) >= shortest and form != secret)
    return tuple(dict.fromkeys(kept))
