"""Themes on a 256-colour terminal (issue 17 item 10): each colour keeps its look. Rich's
cube rounding turned Nord's blue-grey background teal (23), Solarized's cream surface pink
(224) and Solarized's red error the same orange as its warning (166)."""

from __future__ import annotations

import math

import pytest
import yaml
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.color import Color

from hermes_tui.palette256 import Nearest256, _entry, _lab, nearest_256
from hermes_tui.theming import builtin_theme_dir


def rgb(value: str) -> tuple[int, int, int]:
    return tuple(int(value[i : i + 2], 16) for i in (1, 3, 5))


def theme_colours():
    for path in sorted(builtin_theme_dir().glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for key, value in {**data["colors"], **data.get("hermes", {})}.items():
            yield pytest.param(value, id=f"{path.stem}-{key}")


@pytest.mark.parametrize("value", list(theme_colours()))
def test_every_theme_colour_keeps_its_lightness_and_its_hue(value):
    l1, a1, b1 = _lab(rgb(value))
    l2, a2, b2 = _lab(_entry(nearest_256(rgb(value))))
    assert abs(l1 - l2) < 14, (value, l1, l2)  # L*: perceived lightness (the cube is coarse)
    chroma, snapped = math.hypot(a1, b1), math.hypot(a2, b2)
    assert snapped < chroma + 15, (value, chroma, snapped)  # a quiet colour stays quiet
    if chroma > 25:  # a clear colour keeps its hue
        turn = abs(math.degrees(math.atan2(b1, a1) - math.atan2(b2, a2))) % 360
        assert min(turn, 360 - turn) < 30, (value, turn)


def test_the_cases_that_went_wrong():
    assert nearest_256(rgb("#2E3440")) != 23  # Nord background: not teal
    assert nearest_256(rgb("#EEE8D5")) != 224  # Solarized surface: not pink
    assert nearest_256(rgb("#DC322F")) != nearest_256(rgb("#CB4B16"))  # error is not warning


def test_the_filter_snaps_truecolour_and_leaves_the_rest():
    truecolour = Style(color="#2E3440", bgcolor="#EEE8D5", bold=True)
    named = Style(color="red")
    [one, two, three] = Nearest256().apply(
        [Segment("a", truecolour), Segment("b", named), Segment("c", None)], Color(0, 0, 0)
    )
    assert one.style.color == RichColor.from_ansi(nearest_256(rgb("#2E3440")))
    assert one.style.bgcolor == RichColor.from_ansi(nearest_256(rgb("#EEE8D5")))
    assert one.style.bold and two.style == named and three.style is None
