"""A line whose colour alone changes is drawn again (Content's == compares the text alone)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static

from hermes_tui.content_match import same_content
from hermes_tui.widgets import status_line as status_line_module
from hermes_tui.widgets.status_line import StatusLine
from hermes_tui.widgets.status_panel import StatusState, show_content


class LinesApp(App):
    def compose(self) -> ComposeResult:
        yield Static(id="panel-line")
        yield StatusLine(id="status-line")


def styles(content: Content) -> list[str]:
    return [str(span.style) for span in content.spans]


def test_same_content_compares_styles_as_well_as_text():
    red, blue = Content.styled("ready", "red"), Content.styled("ready", "blue")
    assert red == blue  # Textual's own comparison: the text alone
    assert not same_content(red, blue)
    assert same_content(red, Content.styled("ready", "red"))
    assert not same_content("ready", red)  # a prompt given as a string is redrawn


async def test_the_status_panel_s_line_is_redrawn_when_only_its_colour_changes():
    async with LinesApp().run_test() as pilot:
        line = pilot.app.query_one("#panel-line", Static)
        show_content(line, Content.styled("● idle", "$success"))
        show_content(line, Content.styled("● idle", "$error"))
        assert styles(line.content) == ["$error"]


async def test_the_status_line_is_redrawn_when_only_its_colour_changes(monkeypatch):
    shown = iter([Content.styled("● idle", "$success"), Content.styled("● idle", "$error")])
    monkeypatch.setattr(status_line_module, "status_line", lambda *args: next(shown))
    async with LinesApp().run_test() as pilot:
        line = pilot.app.query_one(StatusLine)
        line.show(StatusState(), 0, False, "ctrl+q")
        line.show(StatusState(), 0, False, "ctrl+q")
        assert styles(line.render()) == ["$error"]
