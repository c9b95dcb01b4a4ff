"""How many prompt tokens the provider will count for a request: its last count, moved on.

`estimate_tokens` counts about four characters a token, which can be far off what a server
counts: its tokenizer, its chat template, and tool schemas a template may leave out entirely
(SmolLM2's own template on llama.cpp drops them: 109 tokens counted where we estimate over
1,000). Every turn call whose server reports usage gives a sample: the prompt tokens it
counted beside our estimate of the same request. A later request is then that count plus
our estimate of what changed since (messages added, or removed by a compaction), so
compaction's threshold, its "did it shrink" check and a stopped call's prompt all rest on
the provider's last figure, and only the change is estimated.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.providers.base import UsagePart


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
        """Another conversation or model: the old count no longer applies."""
        self.reported = self.estimated = 0

    @property
    def calibrated(self) -> bool:
        """True once a server reported a prompt size."""
        return self.reported > 0

    def project(self, estimated: int) -> int:
        """A request we estimate at `estimated`, in the provider's units: its last count plus
        the estimated change since (the estimate itself before any count)."""
        if not self.calibrated:
            return estimated
        return max(1, self.reported + estimated - self.estimated)
