"""Truecolour themes on a 256-colour terminal: each colour goes to the palette entry that
looks nearest (CIE Lab), not to Rich's cube rounding, which turns Nord's blue-grey
background teal and Solarized's cream surface pink."""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color as RichColor
from rich.color import ColorType
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter


def _entry(number: int) -> tuple[int, int, int]:
    """The RGB of xterm palette entry 16-255 (the 6x6x6 cube, then the grey ramp)."""
    if number >= 232:
        grey = 8 + 10 * (number - 232)
        return grey, grey, grey
    index = number - 16
    steps = (0, 95, 135, 175, 215, 255)
    return steps[index // 36], steps[index // 6 % 6], steps[index % 6]


def _lab(rgb: tuple[int, int, int]) -> tuple[float, float, float]:
    """sRGB (0-255) to CIE Lab (D65)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    fx, fy, fz = f(x), f(y), f(z)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


# The terminal's own 16 colours (0-15) are left out: each terminal theme sets them.
_PALETTE = [(number, _lab(_entry(number))) for number in range(16, 256)]


@lru_cache(4096)
def nearest_256(rgb: tuple[int, int, int]) -> int:
    """The palette entry (16-255) that looks nearest to `rgb`."""
    lab = _lab(rgb)
    return min(_PALETTE, key=lambda entry: _distance(entry[1], lab))[0]


def _distance(one: tuple[float, float, float], other: tuple[float, float, float]) -> float:
    return sum((a - b) ** 2 for a, b in zip(one, other, strict=True))


def _snapped(color: RichColor | None) -> RichColor | None:
    if color is None or color.type is not ColorType.TRUECOLOR or color.triplet is None:
        return color
    return RichColor.from_ansi(nearest_256(tuple(color.triplet)))


@lru_cache(4096)
def _style(style: Style) -> Style:
    color, bgcolor = _snapped(style.color), _snapped(style.bgcolor)
    if color is style.color and bgcolor is style.bgcolor:
        return style
    return style + Style.from_color(color, bgcolor)


class Nearest256(LineFilter):
    """A line filter that snaps every truecolour to its nearest 256-palette entry."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        """The segments with their colours snapped."""
        # LineFilter.apply's signature passes the background; a snap needs only each segment.
        del background
        return [
            Segment(text, None if style is None else _style(style), control)
            for text, style, control in segments
        ]
