"""A resize mid-stream redraws promptly (issue 29 item 10, Z2): an answer of a few hundred
lines or 64 KB stops growing one Markdown widget, whose every layout (each streamed block, each
resize) lays out all its blocks again; bench/tmux_resize.py times the resize in tmux."""

from __future__ import annotations

from textual.widgets._markdown import MarkdownBlock
from waits import wait_until

from hermes_tui.widgets.live_answer import LiveLazyAnswer
from hermes_tui.widgets.messages import AnswerBlock

PARAGRAPHS = 260
"""Two-line paragraphs: 520 source lines, about 30 KB (the resize bench's answer shape)."""
MOST_BLOCKS = 120
"""Markdown blocks mounted at most mid-stream: a few screens' worth, not all 260."""


def paragraphs(count: int) -> str:
    return "\n\n".join(
        f"Paragraph {n} says lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
        "eiusmod tempor incididunt ut labore et dolore magna aliqua."
        for n in range(count)
    )


async def test_a_long_streamed_answer_stops_growing_one_markdown_widget(
    make_app, scripted_in_process
):
    """Z2: 520 lines of short paragraphs (under the old 2000-line mark, so once one growing
    Markdown widget of 260 blocks) go lazy mid-stream: the mounted blocks stay bounded, and a
    resize then lays out what is near the view."""
    text = paragraphs(PARAGRAPHS)
    server = scripted_in_process({"replies": [{"text": text, "chunk_size": 200, "delay": 0.005}]})
    app = make_app(server)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.ready()
        await app.submit("go")
        await wait_until(
            pilot,
            lambda: any(
                len(a.source) > len(text) * 3 // 4 for a in app.transcript.query(AnswerBlock)
            ),
            timeout=60,
            what="most of the answer streamed",
        )
        [answer] = app.transcript.query(AnswerBlock)
        assert isinstance(answer, LiveLazyAnswer), "a long stream is chunked while it streams"
        assert len(app.transcript.query(MarkdownBlock)) <= MOST_BLOCKS
        await pilot.resize_terminal(124, 36)
        await pilot.pause()
        assert len(app.transcript.query(MarkdownBlock)) <= MOST_BLOCKS
        await app.wait_for_turn(timeout=60)
        await pilot.pause()
        assert the_source(app) == text


def the_source(app) -> str:
    [answer] = app.transcript.query(AnswerBlock)
    return answer.source
