"""A streamed long answer's hand-over is never raced by the transcript's fill (H10, Z2).

The fill builds chunks near the view and releases those far from it on its own queue, while
the stream's end may cut the whole answer again (`finalize` restarts it). A build or release
that lands while the restart is removing the old widgets kept them: the answer then showed
its first chunk twice, an old copy above the new cut, and was twice its height (seen in CI as
a top chunk that was no chunk of the answer). Each test holds the restart in its removal and
lands the fill's step right then.
"""

from __future__ import annotations

import asyncio
import time

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from waits import wait_until

from hermes_tui.textual_compat import being_removed
from hermes_tui.widgets.answer_chunks import Chunk
from hermes_tui.widgets.lazy_answer import PendingChunk, PlainChunk, Wanted
from hermes_tui.widgets.live_answer import LiveLazyAnswer

LINE = "x" * (300 * 1024)
"""A hostile one-line answer: plain pieces of 16 KB, most of them a blank run."""
ENDED = "y" * (280 * 1024)
"""What the stream ended with: not what was streamed, so the end cuts the whole again."""


class Harness(App):
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")


async def live_answer(pilot, app: Harness) -> LiveLazyAnswer:
    answer = LiveLazyAnswer(LINE)
    await app.query_one("#transcript").mount(answer)
    await wait_until(pilot, lambda: answer.pending and answer.built_chunks(), what="the cut")
    return answer


def chunks_shown(answer: LiveLazyAnswer) -> list[Chunk]:
    """Every chunk the answer's widgets stand for, top to bottom (a built chunk once)."""
    shown: list[Chunk] = []
    for child in answer.children:
        if isinstance(child, PendingChunk):
            shown.extend(child.chunks)
            continue
        chunk = getattr(child, "lazy_chunk", None) or _plain(child)
        if chunk is not None and (not shown or shown[-1] is not chunk):
            shown.append(chunk)
    return shown


def _plain(child: Widget) -> Chunk | None:
    return child.chunk if isinstance(child, PlainChunk) else None


async def ended_while(pilot, answer: LiveLazyAnswer, step) -> None:
    """End the stream with ENDED; `step` (the fill's build or release) runs while the end's
    restart is removing the old widgets."""
    old = list(answer.children)
    ending = asyncio.create_task(answer.finalize(ENDED))
    # Every turn of the loop is looked at (the removal takes a few), until the end's cut on
    # its thread is done and the restart begins.
    deadline = time.monotonic() + 30
    while not all(being_removed(child) for child in old) and time.monotonic() < deadline:
        await asyncio.sleep(0)  # one turn of the loop: the moment is the test's subject
    assert all(being_removed(child) and child.parent is answer for child in old), "removed"
    await step()
    await ending
    await pilot.pause()


def shows_the_end_once(answer: LiveLazyAnswer) -> None:
    shown = chunks_shown(answer)
    stale = [i for i, chunk in enumerate(shown) if all(chunk is not c for c in answer.chunks)]
    assert not stale, f"widgets {stale} of {len(shown)} show no chunk of the ended answer"
    assert [id(chunk) for chunk in shown] == [id(chunk) for chunk in answer.chunks]
    assert "".join(chunk.text for chunk in shown) == ENDED


async def test_a_build_that_lands_during_the_ends_restart_is_not_kept():
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = await live_answer(pilot, app)
        blank = answer.pending[0]
        wanted = [Wanted(blank, 0, 1)]  # the top chunk, as a scroll home asks for it
        parsed = await answer.parse(wanted)
        await ended_while(pilot, answer, lambda: answer.mount_parsed(wanted, parsed))
        shows_the_end_once(answer)


async def test_a_release_that_lands_during_the_ends_restart_is_not_kept():
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = await live_answer(pilot, app)
        groups = answer.built_chunks()  # far from the view once the user scrolls up
        await ended_while(pilot, answer, lambda: answer.release(groups))
        shows_the_end_once(answer)


async def test_the_end_of_a_long_line_keeps_what_the_stream_cut():
    """The end cuts the whole once and keeps the streamed chunks it agrees with: the last
    kilobytes of a long line differ in kind (plain text as a piece of the line, Markdown
    alone), and that alone re-built the whole answer at the end of every hostile line."""
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        answer = await live_answer(pilot, app)
        await answer.append("x" * 5000)
        first = answer.pending[0]
        streamed = first.chunks[0]
        await answer.finalize(LINE + "x" * 5000)
        await pilot.pause()
        assert first.parent is answer and answer.chunks[0] is streamed
        assert [c.text for c in chunks_shown(answer)] == [c.text for c in answer.chunks]
        assert all(chunk.plain for chunk in answer.chunks)  # as a stored answer is cut
