"""How many prompt tokens the provider will count for a request: our estimate, calibrated.

`estimate_tokens` counts about four characters a token, which can be far off a model's own
tokenizer and chat template. Every turn call whose server reports usage gives one sample:
the prompt tokens it counted beside our estimate of the same request. Later estimates are
scaled by that ratio, so compaction's threshold, its "did it shrink" check and the prompt
figure of a stopped call all speak in the provider's units when it ever reported one.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.providers.base import UsagePart

MIN_SCALE, MAX_SCALE = 0.25, 4.0
"""The ratio is clamped: one odd sample (a cached prefix, a tiny request) cannot run away."""


def prompt_tokens(usage: UsagePart, *, input_includes_cache: bool) -> int:
    """The request's whole prompt as the provider counted it (Anthropic's input leaves out
    the cached part, the OpenAI wire's includes it)."""
    if input_includes_cache:
        return usage.input_tokens
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


@dataclass
class ContextGauge:
    """The last reported prompt size beside our estimate of that request (none: 0, 0)."""

    reported: int = 0
    estimated: int = 0

    def observe(self, reported: int, estimated: int) -> None:
        """A turn call's server counted `reported` prompt tokens where we estimated `estimated`."""
        if reported > 0 and estimated > 0:
            self.reported, self.estimated = reported, estimated

    def reset(self) -> None:
        """Another conversation or model: the old ratio no longer applies."""
        self.reported = self.estimated = 0

    @property
    def calibrated(self) -> bool:
        """True once a server reported a prompt size."""
        return self.reported > 0

    @property
    def scale(self) -> float:
        """Provider tokens per estimated token (1.0 before any report)."""
        if not self.calibrated:
            return 1.0
        return min(MAX_SCALE, max(MIN_SCALE, self.reported / self.estimated))

    def project(self, estimated: int) -> int:
        """An estimate in the provider's units."""
        return round(estimated * self.scale)
