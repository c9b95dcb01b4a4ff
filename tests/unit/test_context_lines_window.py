"""/context with a model whose window nobody knows: said so, never a division or a guess."""

from agent.context_report import ContextReport
from hermes_tui.commands.project import context_lines


def _report(window: int | None) -> ContextReport:
    return ContextReport(
        system=100,
        instructions=0,
        files=(),
        tools=50,
        tool_count=2,
        history=30,
        messages=1,
        window=window,
    )


def test_an_unknown_window_is_shown_as_unknown_and_the_share_is_left_out() -> None:
    lines = context_lines(_report(None))
    assert lines[0] == "The next request, in estimated tokens (window unknown):"
    assert lines[-1].split() == ["total", "180"]


def test_a_known_window_gives_the_share() -> None:
    lines = context_lines(_report(1_000))
    assert "window 1,000" in lines[0]
    assert lines[-1].endswith("18.0% of the window")
