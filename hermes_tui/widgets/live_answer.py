"""A streamed answer that grows past what one Markdown widget should hold (H10, Z2).

The live answer starts as a plain `AnswerBlock` (the common case, unchanged). Once its text
passes LIVE_CHARS or LIVE_LINES, `LiveFeed` swaps it for a `LiveLazyAnswer` of the text so
far: the chunks more text can no longer change (answer_chunks.py) are finished, blank rows
of their size like a stored `LazyAnswer`'s unless near the view, and only the unfinished
rest (a chunk or two) is re-parsed and re-mounted on each update. The transcript's fill
builds finished chunks as they near the view and releases those far from it, so the widget
tree holds what is near the view whatever the answer's size. When the stream ends the
answer is the chunked block a resumed session shows (checked against a fresh cut).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.await_complete import AwaitComplete
from textual.message import Message
from textual.widget import Widget

from hermes_tui.safe_text import safe_text
from hermes_tui.textual_compat import markdown_blocks
from hermes_tui.widgets.answer import AnswerBlock
from hermes_tui.widgets.answer_chunks import Chunk, line_breaks, split
from hermes_tui.widgets.lazy_answer import LazyAnswer, PendingChunk, PlainChunk, chunk_tokens

LIVE_CHARS = 64 * 1024
"""A streamed answer longer than this (characters) stops growing one Markdown widget."""
LIVE_LINES = 400
"""A streamed answer longer than this (lines) stops growing one Markdown widget: about eleven
screens. Every layout of one growing Markdown widget lays out all its blocks again, and a
stream mounts blocks several times a second, so past this a resize mid-stream waited for
seconds (issue 29; bench/tmux_resize.py measures it)."""
BUILT_FINISHED = 2
"""Chunks finished by one update that are built at once (the ones just above the tail)."""
INLINE_CUT_CHARS = 16 * 1024
"""An unfinished rest up to this long is cut on the UI thread; a longer one on a thread (Z2).
A frame's delta is usually a few kilobytes, but on a loaded machine the bridge coalesces what
arrived while the UI was busy, and one update then brought megabytes whose cut took the UI
thread for seconds (the longer it lagged, the bigger the next delta)."""

Swap = Callable[[Widget, Widget], Awaitable[None]]


class LiveLazyAnswer(LazyAnswer):
    """A long streamed answer: finished chunks built near the view, blank elsewhere; the
    unfinished rest re-parsed on each update."""

    class Changed(Message):
        """The answer's chunks changed: the transcript builds and releases near the view."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._done = 0  # characters of the source in finished chunks
        self._done_line = 0  # the source line the unfinished rest starts on
        self._finished: list[Chunk] = []
        self._tail: list[Widget] = []

    @property
    def unfinished(self) -> str:
        """The text after the finished chunks: what the live tail's widgets show."""
        return self.source[self._done :]

    # Textual's Markdown makes Widget's sync `_on_mount` async, as this does: its dispatch
    # awaits either kind.
    async def _on_mount(self, event: events.Mount) -> None:  # type: ignore[override]
        # Neither Markdown's mount (the whole source at once) nor LazyAnswer's (all pending).
        event.prevent_default()
        self._theme = self.app.theme
        await self._relayout(final=False)

    def append(self, markdown: str) -> AwaitComplete:
        """Append a streamed piece (made terminal-safe): only the unfinished rest is rebuilt."""
        self._markdown = self.source + safe_text(markdown)
        return AwaitComplete(self._relayout(final=False))

    async def finalize(self, content: str) -> None:
        """End the stream: every chunk finished, the same chunks a stored answer is cut into."""
        content = safe_text(content)
        width = self.content_region.width or self._width
        whole, heights = await asyncio.to_thread(_cut, content, 0, width)
        if not self.is_attached:
            return  # removed while it was cut (the transcript moved on)
        async with self.lock:  # what is finished is read and extended in one step
            done = len(self._finished)
            if content != self.source or whole[:done] != self._finished:
                # Not what was streamed, or a cut taken mid-stream moved: all of it again.
                await self._restart(content)
                done = 0
            # The rest is as the whole's cut has it: the streamed cut of the last kilobytes
            # may differ (a piece of a long line is plain text; the same text alone is not),
            # and a restart for that re-built megabytes at the end of every hostile line.
            await self._relayout(final=True, cut=(whole[done:], heights[done:]))
            self._chunks = list(self._finished)

    async def _restart(self, content: str) -> None:
        async with self.lock:
            self._markdown = content
            self._done = self._done_line = 0
            self._finished = []
            self._tail = []
            await self.remove_children()

    async def _relayout(
        self, *, final: bool, cut: tuple[list[Chunk], list[int]] | None = None
    ) -> None:
        """Finish the chunks of the rest that more text cannot change; re-mount the rest.
        `cut` is the rest's chunks and heights when the caller has cut it already."""
        async with self.lock:
            rest = self.source[self._done :]
            width = self.content_region.width or self._width
            if cut is not None:
                chunks, heights = cut
            elif len(rest) > INLINE_CUT_CHARS:
                chunks, heights = await asyncio.to_thread(_cut, rest, self._done_line, width)
                if not self.is_attached:
                    return  # removed while it was cut (the transcript moved on)
            else:
                chunks, heights = _cut(rest, self._done_line, width)
            finished, tail = (chunks, []) if final else (chunks[:-1], chunks[-1:])
            if finished and tail and not tail[0].plain and _partial_line_alone(rest, tail[0]):
                # A block starting on a line still being written may yet join the one above.
                tail.insert(0, finished.pop())
            built_from = len(finished) - BUILT_FINISHED
            widgets: list[Widget] = []
            blank = finished[: max(0, built_from)]
            if blank:  # one blank run, however many chunks it holds (lazy_answer.py)
                widgets.append(PendingChunk(blank, heights[: len(blank)]))
            for chunk in finished[len(blank) :]:
                widgets.extend(self._blocks(chunk, chunk_tokens(chunk)))
            live = [widget for chunk in tail for widget in self._live_blocks(chunk)]
            with self.app.batch_update():
                if self._tail:
                    await self.remove_children(self._tail)
                if widgets or live:
                    await self.mount_all([*widgets, *live])
            self._tail = live
            if finished:
                self._finished.extend(finished)
                self._done += sum(len(chunk.text) for chunk in finished)
                last = finished[-1]
                self._done_line = last.first_line + line_breaks(last.text)
        self.post_message(self.Changed())

    def _live_blocks(self, chunk: Chunk) -> list[Any]:
        """The unfinished rest's widgets (not chunks yet: never released)."""
        if chunk.plain:
            return [PlainChunk(chunk)]
        blocks = markdown_blocks(self, chunk_tokens(chunk))
        for block in blocks:
            start, end = block.source_range
            block.source_range = (start + chunk.first_line, end + chunk.first_line)
        return blocks


def _cut(rest: str, first_line: int, width: int) -> tuple[list[Chunk], list[int]]:
    """The chunks of the unfinished rest and their estimated heights: pure text work."""
    chunks = split(rest, first_line=first_line) if rest else []
    return chunks, [chunk.estimated_height(width) for chunk in chunks]


def _partial_line_alone(rest: str, tail: Chunk) -> bool:
    """True when the tail chunk is only the line still being written."""
    return not rest.endswith("\n") and "\n" not in tail.text


class LiveFeed:
    """What the answer stream writes to: the live `AnswerBlock`, swapped (by `swap`) for a
    `LiveLazyAnswer` once the text passes LIVE_CHARS or LIVE_LINES."""

    def __init__(self, answer: AnswerBlock, swap: Swap) -> None:
        self.widget: AnswerBlock = answer
        self._swap = swap
        self._chars = len(answer.source)
        self._lines = answer.source.count("\n")

    def append(self, text: str) -> Awaitable[Any]:
        """Show a streamed piece."""
        self._chars += len(text)
        self._lines += text.count("\n")
        if isinstance(self.widget, LiveLazyAnswer) or not self._passed():
            return self.widget.append(text)
        return self._go_lazy(self.widget.source + safe_text(text))

    def wait_for_refresh(self) -> Awaitable[Any]:
        """Wait for the repaint that shows the last update."""
        return self.widget.wait_for_refresh()

    async def finalize(self, content: str) -> None:
        """End the stream with `content`, the whole answer."""
        if not isinstance(self.widget, LiveLazyAnswer):
            self._chars, self._lines = len(content), content.count("\n")
            if not self._passed():
                await self.widget.finalize(content)
                return
            await self._go_lazy(safe_text(content))
        await self.widget.finalize(content)

    def _passed(self) -> bool:
        return self._chars > LIVE_CHARS or self._lines > LIVE_LINES

    async def _go_lazy(self, text: str) -> None:
        old, self.widget = self.widget, LiveLazyAnswer(text)
        await self._swap(old, self.widget)
