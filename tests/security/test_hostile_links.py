"""Links in an answer are the model's text: a click opens http, https and mailto only; a
`file:`, custom-scheme or schemeless link says what it is and opens nothing (SPEC H1).
Pilot tests over real HTTP (the scripted server): the rendered link is clicked.
"""

from __future__ import annotations

import webbrowser

import pytest
from textual.widgets._markdown import MarkdownParagraph
from textual.widgets._toast import Toast
from ui.tui_helpers import reply, run_turn, settled_screen
from waits import wait_until

from hermes_tui.links import refusal
from hermes_tui.widgets.messages import AnswerBlock

SIZE = (120, 40)
LINKS = [
    # (the link as the model writes it, what a click would open, its scheme). Textual's
    # parser does not make `file:` or `javascript:` links at all, but it decodes the href
    # on a click, so an encoded one reaches the opener as the real thing.
    ("fil%65:///etc/passwd", "file:///etc/passwd", "file:"),
    ("javascript%3Aalert(1)", "javascript:alert(1)", "javascript:"),
    ("vscode://file/etc/passwd", "vscode://file/etc/passwd", "vscode:"),
    ("x-foo:bar", "x-foo:bar", "x-foo:"),
    ("ssh://evil.example/", "ssh://evil.example/", "ssh:"),
]


@pytest.mark.parametrize(
    ("url", "opens"),
    [
        ("https://example.org/a?b=c", True),
        ("HTTP://example.org/", True),
        ("mailto:someone@example.org", True),
        *((url, False) for _written, url, _scheme in LINKS),
        ("README.md", False),
        ("https://example.org/\u202egpj.exe", False),
        ("https://example.org/a\nb", False),
    ],
)
def test_only_web_and_mail_links_open(url, opens):
    """H1: the scheme decides, and a link that does not show as itself never opens."""
    assert (refusal(url) is None) is opens


async def click_link(pilot, answer: AnswerBlock, label: str) -> None:
    """Click the rendered link `label` in the answer, as a user would."""
    for paragraph in answer.query(MarkdownParagraph):
        text = paragraph.visual.plain if hasattr(paragraph.visual, "plain") else ""
        column = text.find(label)
        if column >= 0:
            await pilot.click(paragraph, offset=(column + 1, 0))
            await pilot.pause()
            return
    raise AssertionError(f"no link {label!r} in the answer")


async def test_a_clicked_file_or_custom_scheme_link_is_named_and_not_opened(
    make_app, scripted, monkeypatch
):
    """H1: clicking a `file:` (or other) link opens nothing and a toast names its scheme; an
    https link opens."""
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *args, **kwargs: opened.append(url))
    lines = [f"- [link{index}]({written})" for index, (written, _, _) in enumerate(LINKS)]
    answer_text = "\n".join([*lines, "- [web](https://example.org/docs)", ""])
    app = make_app(scripted({"replies": [reply(answer_text)]}))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await run_turn(pilot, "links please")
        # A click goes where the link is on screen: first let the view come to rest (on a
        # loaded machine the answer could still be moving when the first click landed).
        await settled_screen(pilot)
        [answer] = app.transcript.query(AnswerBlock)
        for index, (_written, url, scheme) in enumerate(LINKS):
            await click_link(pilot, answer, f"link{index}")
            await wait_until(
                pilot,
                lambda url=url: any(url in str(t.render()) for t in app.screen.query(Toast)),
                what=f"a toast naming {url}",
            )
            toast = next(t for t in app.screen.query(Toast) if url in str(t.render()))
            assert f"`{scheme}`" in str(toast.render()) and "Not opened" in str(toast.render())
        assert opened == []
        await click_link(pilot, answer, "web")
        await wait_until(pilot, lambda: opened, what="the https link opened")
        assert opened == ["https://example.org/docs"]
