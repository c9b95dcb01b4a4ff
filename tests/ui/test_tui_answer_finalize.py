"""A streamed answer ends with exactly the blocks a fresh render of its full text has."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock

from hermes_tui.widgets.messages import AnswerBlock

DOCUMENTS = {
    "table": "Intro line\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter the table.\n",
    "setext heading": "A title\n=======\n\nBody text here.\n",
    "fence": "Code:\n\n```python\ndef f():\n    return 1\n```\n\nDone.\n",
    "list": "- one\n- two\n  continued\n- three\n\nEnd.\n",
    "prose": "Plain paragraph one.\n\nParagraph two, longer, with **bold**.\n",
}


class Harness(App):
    def compose(self) -> ComposeResult:
        yield AnswerBlock(id="streamed")
        yield Markdown(id="fresh")


def blocks(widget: Markdown) -> list[tuple[str, tuple[int, int] | None]]:
    return [
        (type(b).__name__, b.source_range) for b in widget.children if isinstance(b, MarkdownBlock)
    ]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
async def test_finalize_matches_a_fresh_render(name):
    text = DOCUMENTS[name]
    app = Harness()
    async with app.run_test() as pilot:
        answer = app.query_one("#streamed", AnswerBlock)
        stream = Markdown.get_stream(answer)
        for i in range(0, len(text), 3):  # small pieces, as a model streams them
            await stream.write(text[i : i + 3])
            await pilot.pause()
        await stream.stop()
        await answer.finalize(text)
        fresh = app.query_one("#fresh", Markdown)
        await fresh.update(text)
        await pilot.pause()
        assert answer.source == text
        assert blocks(answer) == blocks(fresh)


async def test_finalize_skips_the_remount_when_the_stream_already_matches():
    text = DOCUMENTS["prose"] * 20
    app = Harness()
    async with app.run_test() as pilot:
        answer = app.query_one("#streamed", AnswerBlock)
        stream = Markdown.get_stream(answer)
        await stream.write(text)
        await stream.stop()
        await pilot.pause()
        updates = []
        original = answer.update
        answer.update = lambda markdown: updates.append(markdown) or original(markdown)
        await answer.finalize(text)
        assert updates == []
        await answer.finalize(text + "\nOne more line.\n")
        assert len(updates) == 1


async def test_finalize_rerenders_when_a_mounted_block_differs_from_a_fresh_parse():
    text = DOCUMENTS["table"]
    app = Harness()
    async with app.run_test() as pilot:
        answer = app.query_one("#streamed", AnswerBlock)
        stream = Markdown.get_stream(answer)
        await stream.write(text)
        await stream.stop()
        await pilot.pause()
        # A block left with the shape a prefix of its text gave it.
        stale = [b for b in answer.children if isinstance(b, MarkdownBlock)][1]
        stale.source_range = (stale.source_range[0], stale.source_range[0] + 1)
        await answer.finalize(text)
        fresh = app.query_one("#fresh", Markdown)
        await fresh.update(text)
        await pilot.pause()
        assert blocks(answer) == blocks(fresh)
