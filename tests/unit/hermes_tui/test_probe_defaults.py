"""What the user's app runs with: the test knobs' defaults are the shipped behaviour."""

from __future__ import annotations

from hermes_tui.probes import Probes, cursor_blinks, probe


def test_a_users_app_collects_before_it_freezes_and_plays_the_demo_at_its_pace():
    """Only a test turns the start-up collection off or the demo's pace up (Z2: the frozen
    heap holds no garbage; the demo streams for a person to read)."""
    probes = Probes()
    assert probes.collect_before_freeze is True
    assert probes.demo_delay is None


def test_a_users_app_shows_each_tool_s_duration_as_measured():
    """Only a test fixes the durations a tool block shows (snapshots on a loaded machine)."""
    assert Probes().tool_duration is None


def test_a_probe_falls_back_to_the_shipped_default():
    """A widget in a host app without probes, and a probe left unset, read the default; a
    probe a test set (even to False) is what they read."""

    class HostApp:  # a widget's own test app: no probes at all
        pass

    class ProbedApp:
        probes = Probes(margin_delay=0.25, cursor_blink=False)

    assert probe(HostApp(), "margin_delay", 0.5) == 0.5
    assert probe(HostApp(), "parse_hold") is None
    assert probe(ProbedApp(), "margin_delay", 0.5) == 0.25
    assert probe(ProbedApp(), "tool_duration", "as measured") == "as measured"  # unset
    assert cursor_blinks(HostApp()) is True
    assert cursor_blinks(ProbedApp()) is False
