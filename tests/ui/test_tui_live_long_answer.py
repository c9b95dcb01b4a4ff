"""A streamed answer of megabytes costs what the screen shows (H10, Z2): past a size the live
answer stops growing one Markdown widget; its finished chunks are built near the view only,
while it streams and after, and it ends as the chunked answer a resumed session shows."""

from __future__ import annotations

import asyncio
import threading

from textual.widgets._markdown import MarkdownBlock
from waits import wait_until

from bench._long_answers import long_answer
from hermes_tui.clipboard import clip_for
from hermes_tui.widgets import live_answer
from hermes_tui.widgets.answer_chunks import split
from hermes_tui.widgets.lazy_answer import LazyAnswer, PendingChunk, PlainChunk
from hermes_tui.widgets.live_answer import LiveLazyAnswer
from hermes_tui.widgets.messages import AnswerBlock

MB = 1024 * 1024
PIECE = 16 * 1024
_CHUNK = 'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'
MAX_BLOCKS = 300
"""Markdown blocks mounted at most: a few screens' worth (a full build is tens of thousands)."""
MAX_MOUNTED_CHARS = 512 * 1024
"""Answer text held by mounted blocks at most: a few screens' worth, not the megabytes."""


def endless_line(total: int) -> dict:
    """A hostile reply: `total` characters of one line in 16 KB deltas (as in
    tests/security/test_hostile_answer.py), cut by the app at `agent.max_answer_mb`."""
    line = _CHUNK + '"delta":{"content":"' + "x" * PIECE + '"},"finish_reason":null}]}\n\n'
    return {
        "raw_sse": [
            {"repeat": line, "times": total // PIECE},
            _CHUNK + '"delta":{},"finish_reason":"stop"}]}\n\n',
            "data: [DONE]\n\n",
        ]
    }


def the_answer(app) -> AnswerBlock:
    answers = list(app.transcript.query(AnswerBlock))
    assert len(answers) == 1
    return answers[0]


def mounted(app) -> int:
    """Markdown blocks and plain pieces mounted in the transcript."""
    return len(app.transcript.query(MarkdownBlock)) + len(app.transcript.query(PlainChunk))


def mounted_chars(app) -> int:
    """Answer text the mounted blocks and plain pieces hold: each built chunk's text once,
    the live tail's unfinished text once, a short answer's blocks by their source lines.

    Not by source lines alone: the live tail of a one-line answer is a block on line 0,
    whose range would count the whole line (megabytes) for the few kilobytes it holds."""
    total = 0
    for answer in app.transcript.query(AnswerBlock):
        chunks: set[int] = set()
        tail = False
        for child in answer.children:
            chunk = getattr(child, "lazy_chunk", None)
            if chunk is None and isinstance(child, PlainChunk):
                chunk = child.chunk
            if chunk is not None:
                if id(chunk) not in chunks:
                    chunks.add(id(chunk))
                    total += len(chunk.text)
            elif isinstance(answer, LiveLazyAnswer) and isinstance(child, MarkdownBlock):
                tail = True
            elif isinstance(child, MarkdownBlock):
                start, end = child.source_range
                total += len("".join(answer.source.splitlines(keepends=True)[start:end]))
        if tail:
            total += len(answer.unfinished)
    return total


def bounded(app) -> None:
    """H10: what is mounted is a few screens' worth, however long the answer."""
    assert mounted(app) <= MAX_BLOCKS, mounted(app)
    assert mounted_chars(app) <= MAX_MOUNTED_CHARS, mounted_chars(app)


def in_view(app, widget) -> bool:
    view, region = app.transcript.region, widget.region
    return bool(region.height) and region.y < view.bottom and region.bottom > view.y


def pending_in_view(app) -> list[PendingChunk]:
    return [chunk for chunk in app.transcript.query(PendingChunk) if in_view(app, chunk)]


async def streamed_then_checked(app, pilot, total: int) -> None:
    """Mid-stream: the live answer is bounded and the end of what arrived is in view."""
    await app.submit("go")
    await wait_until(
        pilot,
        lambda: len(app.transcript.query(AnswerBlock)) == 1 and len(the_answer(app).source) > total,
        timeout=60,
        what=f"{total} characters streamed",
    )
    bounded(app)
    assert app.transcript.following
    await wait_until(
        pilot,
        lambda: the_answer(app).children and in_view(app, the_answer(app).children[-1]),
        what="the streamed tail in view",
    )


async def scrolled_home(app, pilot) -> None:
    app.transcript.scroll_home(animate=False, immediate=True)
    # Not only "not filling": the scroll asks for its fill after a refresh, so right after
    # it nothing may be filling yet while the top is still blank (seen on a loaded machine).
    await wait_until(
        pilot,
        lambda: (
            app.transcript.scroll_y == 0 and not app.transcript.filling and not pending_in_view(app)
        ),
        what="the top built",
    )


def top_of(app, answer, shown) -> str:
    """What the top of the view held, for a failure: which chunks, where, and the scroll."""
    index = {id(chunk): i for i, chunk in enumerate(answer.chunks)}
    rows = [
        f"{type(child).__name__}#{index.get(id(getattr(child, 'chunk', None)), '-')}"
        f"@{child.region.y}+{child.region.height}"
        for child in list(answer.children)[:6]
    ]
    shown_at = [index.get(id(piece.chunk), "not a chunk of the answer") for piece in shown]
    return (
        f"scroll_y={app.transcript.scroll_y} view={app.transcript.region} "
        f"in view: chunks {shown_at[:4]}; the answer's first children: {rows}"
    )


async def test_a_hostile_4_mb_line_streams_bounded_and_ends_lazy(make_app, scripted):
    """H10, Z2: a 10 MB one-line answer (cut at 4 MB) never grows one widget of megabytes:
    a bounded number of pieces is mounted while it streams and after; the tail is in view;
    the top is built when scrolled to; copy takes the whole text."""
    server = scripted({"replies": [endless_line(10 * MB)]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        await streamed_then_checked(app, pilot, MB)
        await app.wait_for_turn(timeout=120)
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        answer = the_answer(app)
        assert isinstance(answer, LazyAnswer)
        assert len(answer.source) == 4 * MB
        assert answer.chunks == split(answer.source)  # what a resumed session shows
        bounded(app)
        pieces = [piece for piece in app.transcript.query(PlainChunk) if in_view(app, piece)]
        assert pieces and pieces[-1].chunk.text.endswith("x")  # the tail is what is seen
        assert not pending_in_view(app)
        clip = clip_for(None, None, list(app.transcript.children))
        assert clip is not None and len(clip.text) == 4 * MB
        await scrolled_home(app, pilot)
        first = [piece for piece in app.transcript.query(PlainChunk) if in_view(app, piece)]
        assert first and first[0].chunk is answer.chunks[0], top_of(app, answer, first)
        assert not pending_in_view(app)
        bounded(app)
        # Resumed, the stored 4 MB line is the same chunks, as bounded (no widget of 4 MB).
        chunks, session_id = answer.chunks, app.agent.session_id
        await app.run_command("/new")
        await app.resume_session(session_id)
        await wait_until(pilot, lambda: not app.transcript.filling, what="the resumed view")
        resumed = the_answer(app)
        assert isinstance(resumed, LazyAnswer) and resumed.chunks == chunks
        bounded(app)


async def test_a_streamed_2_mb_markdown_answer_keeps_few_blocks_and_builds_on_scroll(
    make_app, scripted
):
    """H10, Z2: a 2.2 MB Markdown answer (60,000 lines) streams with a bounded number of
    Markdown blocks mounted (a full build is tens of thousands), its last lines in view; after
    the turn it is the chunked answer a resumed session shows, and its top builds on scroll."""
    text = "".join(long_answer(i) + "\n\n" for i in range(200)) + "The last line."
    server = scripted({"replies": [{"text": text, "chunk_size": 8192}]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        await streamed_then_checked(app, pilot, MB)
        await app.wait_for_turn(timeout=120)
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        answer = the_answer(app)
        assert isinstance(answer, LazyAnswer) and answer.source == text
        # The test's own cut of 2 MB runs off the app's loop too, not to stall the app.
        assert answer.chunks == await asyncio.to_thread(split, text)
        bounded(app)
        shown = [b for b in app.transcript.query(MarkdownBlock) if in_view(app, b)]
        assert shown and shown[-1].source.rstrip().endswith("The last line.")
        assert not pending_in_view(app)
        clip = clip_for(None, None, list(app.transcript.children))
        assert clip is not None and clip.text == text.strip("\n")
        await scrolled_home(app, pilot)
        shown = [b for b in app.transcript.query(MarkdownBlock) if in_view(app, b)]
        assert shown and shown[0].source.startswith("## Part 1 of answer 0")
        bounded(app)


async def test_a_big_coalesced_delta_is_cut_off_the_ui_thread(make_app, scripted, monkeypatch):
    """Z2: when one update brings a long unfinished rest (a loaded machine's UI lags and the
    bridge coalesces what arrived meanwhile), the live answer cuts it on a thread, not on the
    UI thread: the cut of megabytes took the UI thread for seconds, and the lag grew."""
    text = "".join(long_answer(i) + "\n\n" for i in range(20)) + "The last line."
    assert len(text) > 10 * live_answer.INLINE_CUT_CHARS
    cuts: list[tuple[int, bool]] = []
    split_ = live_answer.split

    def spied(rest: str, *args, **kwargs):
        cuts.append((len(rest), threading.current_thread() is threading.main_thread()))
        return split_(rest, *args, **kwargs)

    monkeypatch.setattr(live_answer, "split", spied)
    server = scripted({"replies": [{"text": text, "chunk_size": len(text)}]})  # one delta
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        await app.submit("go")
        await app.wait_for_turn(timeout=60)
        await wait_until(pilot, lambda: not app.transcript.filling, what="the view built")
        assert isinstance(the_answer(app), LazyAnswer) and the_answer(app).source == text
    big = [on_ui for size, on_ui in cuts if size > live_answer.INLINE_CUT_CHARS]
    assert big and not any(big), cuts


async def test_a_small_streamed_answer_is_one_markdown_block_as_before(make_app, scripted):
    """Z2: the common case is unchanged: a streamed answer under the size is one AnswerBlock
    that grows its Markdown, not a lazy one."""
    text = long_answer(0)
    server = scripted({"replies": [{"text": text}]})
    app = make_app(server)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.ready()
        await app.submit("go")
        await app.wait_for_turn(timeout=60)
        await pilot.pause()
        answer = the_answer(app)
        assert type(answer) is AnswerBlock and answer.source == text
        assert not app.transcript.query(PendingChunk)
