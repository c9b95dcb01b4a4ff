"""The context gauge: a request in the provider's units, from its last count and our estimate."""

from __future__ import annotations

from agent.context_gauge import ContextGauge, prompt_tokens
from agent.providers.base import UsagePart


def test_before_any_report_an_estimate_is_taken_as_it_is():
    gauge = ContextGauge()
    assert not gauge.calibrated and gauge.project(1234) == 1234


def test_the_last_count_moves_by_the_estimated_change_and_a_reset_forgets_it():
    gauge = ContextGauge()
    # A template that drops the tool schemas: the server counts far less than we estimate.
    gauge.observe(reported=109, estimated=1100)
    assert gauge.project(1100) == 109
    assert gauge.project(1150) == 159  # 50 estimated tokens more: an answer and a question
    assert gauge.project(1000) == 9  # a compaction took 100 estimated tokens out
    assert gauge.project(0) == 1  # never nothing
    gauge.observe(reported=0, estimated=1000)  # a server that reported nothing: no sample
    assert gauge.project(1100) == 109
    gauge.reset()
    assert gauge.project(2000) == 2000


def test_the_prompt_counts_the_cached_part_on_the_anthropic_wire_only():
    usage = UsagePart(input_tokens=18, cache_read_tokens=1324, cache_write_tokens=2)
    assert prompt_tokens(usage, input_includes_cache=False) == 1344
    assert prompt_tokens(usage, input_includes_cache=True) == 18
