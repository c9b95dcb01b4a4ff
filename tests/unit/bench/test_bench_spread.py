"""The bench's ratio of medians, its interval from resampled rounds and its verdict (Z2)."""

from __future__ import annotations

import pytest

from bench._spread import Ratio, Spread, paired_ratio


def test_spread_gives_the_median_and_the_quartiles() -> None:
    spread = Spread.of([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (spread.median, spread.q1, spread.q3, spread.count) == (3.0, 2.0, 4.0, 5)
    assert spread.scaled(1000).median == 3000.0
    assert Spread.of([7.0]).text() == "7.000 (IQR 7.000-7.000, n=1)"


def test_a_clear_ratio_is_called_and_one_near_the_target_is_not() -> None:
    """Z2: the bench says met or missed only when the whole interval is on one side."""
    base = [[10.0, 11.0, 9.0]] * 8
    slower = [[20.0, 21.0, 19.0]] * 8
    missed = paired_ratio(slower, base)
    assert missed.value == pytest.approx(2.0)
    assert missed.verdict(1.2) == "missed"
    assert paired_ratio(base, base).verdict(1.2) == "met"
    assert Ratio(1.1, 0.9, 1.4).verdict(1.2) == "not called"


def test_rounds_are_resampled_in_pairs_so_shared_load_cancels() -> None:
    """A burst of load that slows both sides of one round widens nothing: each draw takes a
    round of both sides together."""
    base = [[10.0] * 3, [10.0] * 3, [40.0] * 3, [10.0] * 3]
    side = [[11.0] * 3, [11.0] * 3, [44.0] * 3, [11.0] * 3]
    ratio = paired_ratio(side, base)
    assert ratio.low == pytest.approx(1.1)
    assert ratio.high == pytest.approx(1.1)


def test_unpaired_rounds_are_refused() -> None:
    with pytest.raises(ValueError, match="same number of rounds"):
        paired_ratio([[1.0]], [[1.0], [2.0]])
