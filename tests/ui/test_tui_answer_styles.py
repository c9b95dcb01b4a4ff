"""Answer blocks share their inline styles, and still restyle exactly as Textual's own do."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock

from hermes_tui.widgets.messages import AnswerBlock

TEXT = "".join(f"Paragraph {i} with `code`, **bold**, *em* and ~~gone~~.\n\n" for i in range(12))
TEXT += "- a list item with `code`\n- and *another*\n"
INLINE = ("code_inline", "em", "strong", "s")


class Harness(App):
    def compose(self) -> ComposeResult:
        yield AnswerBlock(TEXT, id="answer")
        yield Markdown(TEXT, id="plain")


def inline_styles(widget: Markdown) -> list[tuple]:
    """Every block's (and nested block's) resolved inline colours and text styles."""
    found = []
    for block in widget.query(MarkdownBlock):
        for name in INLINE:
            styles = block.get_component_styles(name)
            found.append(
                (type(block).__name__, name, styles.color, styles.background, styles.text_style)
            )
    return found


async def test_blocks_of_one_answer_compute_their_inline_styles_once(monkeypatch):
    """Textual matches the stylesheet once per inline class on a virtual node per block; an
    answer's sibling blocks share that work instead."""
    computed: list[str] = []
    apply = Stylesheet.apply

    def counting_apply(self, node, **kwargs):
        if type(node) is DOMNode:  # the virtual node of one component class
            computed.append(node.parent.id or node.parent.parent.id)
        return apply(self, node, **kwargs)

    monkeypatch.setattr(Stylesheet, "apply", counting_apply)
    app = Harness()
    async with app.run_test() as pilot:
        await pilot.pause()
        per_widget = {name: computed.count(name) for name in ("answer", "plain")}
    # 12 top-level paragraphs: Textual's own widget computes them 12 times, ours a few times.
    assert per_widget["plain"] >= 12 * len(INLINE), per_widget
    assert per_widget["answer"] <= 5 * len(INLINE), per_widget


async def test_shared_inline_styles_match_textuals_own_in_every_theme():
    app = Harness()
    async with app.run_test() as pilot:
        await pilot.pause()
        answer = app.query_one("#answer", AnswerBlock)
        plain = app.query_one("#plain", Markdown)
        dark = inline_styles(plain)
        assert inline_styles(answer) == dark
        app.theme = "textual-light"
        await pilot.pause()
        light = inline_styles(plain)
        assert light != dark  # the switch really changed the inline colours
        assert inline_styles(answer) == light
