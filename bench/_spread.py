"""Honest ratios from noisy timings: medians, their spread, and whether a target is met.

A bench that alternates two states round by round (an empty session, then a long one, then
the empty one again) gets rounds of samples for each side. The ratio it prints is the ratio
of the two sides' medians; its interval resamples whole rounds, so the load of a given moment
weighs on both sides alike, and the target is called only when the interval is clear of it.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

DRAWS = 2_000
"""Bootstrap resamples behind a ratio's interval (a few milliseconds for a bench's samples)."""


@dataclass(frozen=True)
class Spread:
    """The median and the quartiles of one side's samples."""

    median: float
    q1: float
    q3: float
    count: int

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        """The spread of `values` (at least one)."""
        if len(values) < 2:
            return cls(values[0], values[0], values[0], len(values))
        q1, middle, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return cls(middle, q1, q3, len(values))

    def scaled(self, factor: float) -> Spread:
        """The same spread in other units (seconds to milliseconds)."""
        return Spread(self.median * factor, self.q1 * factor, self.q3 * factor, self.count)

    def text(self) -> str:
        """`median (IQR q1-q3, n=count)`."""
        return f"{self.median:.3f} (IQR {self.q1:.3f}-{self.q3:.3f}, n={self.count})"


@dataclass(frozen=True)
class Ratio:
    """median(side) / median(base), with a 95 % interval from resampled rounds."""

    value: float
    low: float
    high: float

    def verdict(self, target: float) -> str:
        """`met` when the whole interval is at or under `target`, `missed` when it is all
        above, else `not called` (the samples cannot tell)."""
        if self.high <= target:
            return "met"
        if self.low > target:
            return "missed"
        return "not called"

    def text(self, target: float) -> str:
        """`value (95 % low-high; target <= t: verdict)`."""
        return (
            f"{self.value:.3f} (95% {self.low:.3f}-{self.high:.3f}; "
            f"target <= {target:g}: {self.verdict(target)})"
        )


def flat(rounds: list[list[float]]) -> list[float]:
    """Every sample of every round."""
    return [value for samples in rounds for value in samples]


def paired_ratio(side: list[list[float]], base: list[list[float]], seed: int = 27) -> Ratio:
    """The ratio of medians of `side` to `base`, rounds paired by index (round i of each
    side ran back to back), its interval from resampling those pairs of rounds."""
    if len(side) != len(base) or not side:
        raise ValueError("paired_ratio needs the same number of rounds on both sides")
    value = statistics.median(flat(side)) / statistics.median(flat(base))
    pick = random.Random(seed)
    indices = range(len(side))
    draws = []
    for _ in range(DRAWS):
        chosen = pick.choices(indices, k=len(side))
        top = statistics.median(flat([side[i] for i in chosen]))
        bottom = statistics.median(flat([base[i] for i in chosen]))
        draws.append(top / bottom)
    draws.sort()
    return Ratio(value, draws[int(0.025 * DRAWS)], draws[int(0.975 * DRAWS) - 1])
