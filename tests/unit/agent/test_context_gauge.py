"""The context gauge: estimates in the provider's units once a server reported a prompt size."""

from __future__ import annotations

from agent.context_gauge import MAX_SCALE, ContextGauge, prompt_tokens
from agent.providers.base import UsagePart


def test_before_any_report_an_estimate_is_taken_as_it_is():
    gauge = ContextGauge()
    assert not gauge.calibrated and gauge.scale == 1.0 and gauge.project(1234) == 1234


def test_a_report_scales_later_estimates_and_a_reset_forgets_it():
    gauge = ContextGauge()
    gauge.observe(reported=1500, estimated=1000)
    assert gauge.project(1000) == 1500 and gauge.project(2000) == 3000
    gauge.observe(reported=0, estimated=1000)  # a server that reported nothing: no sample
    assert gauge.scale == 1.5
    gauge.reset()
    assert gauge.project(2000) == 2000


def test_an_odd_sample_cannot_run_away():
    gauge = ContextGauge()
    gauge.observe(reported=10**6, estimated=10)
    assert gauge.scale == MAX_SCALE


def test_the_prompt_counts_the_cached_part_on_the_anthropic_wire_only():
    usage = UsagePart(input_tokens=18, cache_read_tokens=1324, cache_write_tokens=2)
    assert prompt_tokens(usage, input_includes_cache=False) == 1344
    assert prompt_tokens(usage, input_includes_cache=True) == 18
