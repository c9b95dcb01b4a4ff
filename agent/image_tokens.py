"""What an image costs in prompt tokens, by each provider's documented formula (G4).

Anthropic: about width x height / 750 tokens, after the server scales the image so its long
edge is at most 1568 px and it costs at most about 1,600 tokens. OpenAI (detail high or
auto): fit within 2048 x 2048, scale the short side down to 768, then 85 tokens plus 170
for each 512 px tile. A count made before the wire is known uses Anthropic's, the larger
for the images we send, so a context threshold errs early rather than late.
"""

from __future__ import annotations

import math

ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_TOKENS = 1600
"""Anthropic scales an image down until it costs about this many tokens, no more."""
OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170


def _fit(width: int, height: int, side: int, *, short: bool = False) -> tuple[float, float]:
    """(width, height) scaled down (never up) so the long (or short) side is at most `side`."""
    edge = min(width, height) if short else max(width, height)
    scale = min(1.0, side / edge) if edge > 0 else 1.0
    return width * scale, height * scale


def anthropic_image_tokens(width: int, height: int) -> int:
    """An image's tokens on the Anthropic wire."""
    w, h = _fit(width, height, ANTHROPIC_LONG_EDGE)
    return max(1, min(ANTHROPIC_MAX_TOKENS, math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)))


def openai_image_tokens(width: int, height: int) -> int:
    """An image's tokens on the OpenAI wire (detail high, which auto is for our sizes)."""
    w, h = _fit(width, height, OPENAI_FIT)
    w, h = _fit(round(w), round(h), OPENAI_SHORT_SIDE, short=True)
    tiles = max(1, math.ceil(w / OPENAI_TILE)) * max(1, math.ceil(h / OPENAI_TILE))
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def image_tokens(width: int, height: int, wire: str | None) -> int:
    """An image's tokens on `wire` ("openai" or "anthropic"; None: not known yet)."""
    if wire == "openai":
        return openai_image_tokens(width, height)
    return anthropic_image_tokens(width, height)
