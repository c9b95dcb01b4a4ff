"""A stored long answer whose Markdown is built chunk by chunk as it nears the view (Z2).

A 300-line answer is a few hundred Markdown blocks, and mounting them all is what made a
session of long answers take seconds to open. `LazyAnswer` mounts each chunk (answer_chunks.py)
as a blank `PendingChunk` of about its built height, and builds the chunks the transcript says
are near the view, as they are scrolled to. When a session opens, the chunks of its bottom
screen show as plain text in the first frame (one cheap widget each) and are built as
Markdown right after it. Parsing runs off the UI thread (`build`); only mounting is on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from textual import events
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.safe_text import safe_text
from hermes_tui.textual_compat import markdown_blocks
from hermes_tui.widgets.answer import AnswerBlock
from hermes_tui.widgets.answer_chunks import Chunk, split


class PendingChunk(Static):
    """A chunk of an answer not built yet: its plain text (`height` None), else blank rows of
    about its built height."""

    DEFAULT_CSS = "PendingChunk { width: 1fr; height: auto; }"

    def __init__(self, chunk: Chunk, height: int | None) -> None:
        super().__init__(chunk.text.rstrip("\n") if height is None else "", markup=False)
        self.chunk = chunk
        if height is not None:
            self.styles.height = height


class LazyAnswer(AnswerBlock):
    """A long answer shown as Markdown where it is seen, blank rows of its size elsewhere."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._markdown = safe_text(text)
        self._chunks: list[Chunk] | None = None
        # The chunks shown as plain text until they are built (the bottom screen on opening).
        self._plain: set[int] = set()
        self._width = 80

    @property
    def chunks(self) -> list[Chunk]:
        """The answer cut into chunks (cut on first use)."""
        if self._chunks is None:
            self._chunks = split(self._markdown)
        return self._chunks

    def prepare(self, width: int, tail_rows: int) -> int:
        """Cut and estimate at `width`; the last chunks that fill `tail_rows` rows are shown
        as plain text until built. Returns the answer's estimated height in rows.

        Thread-safe (it touches no widget state): the transcript calls it off the UI thread
        before mounting.
        """
        self._width = width
        heights = [chunk.estimated_height(width) for chunk in self.chunks]
        covered = 0
        for index in reversed(range(len(self.chunks))):
            if covered >= tail_rows:
                break
            self._plain.add(index)
            covered += heights[index]
        return sum(heights) + 1  # the answer's top margin

    async def _on_mount(self, event: events.Mount) -> None:
        # Not Markdown's mount, which would parse and mount the whole source at once.
        event.prevent_default()
        self._theme = self.app.theme
        await self.mount_all(
            PendingChunk(chunk, None if i in self._plain else chunk.estimated_height(self._width))
            for i, chunk in enumerate(self.chunks)
        )

    @property
    def pending(self) -> list[PendingChunk]:
        """The chunks not built yet, top to bottom."""
        return [child for child in self.children if isinstance(child, PendingChunk)]

    async def build(self, pending: Sequence[PendingChunk]) -> None:
        """Build `pending` chunks as Markdown in their places (parsed off the UI thread)."""
        texts = [placeholder.chunk.text for placeholder in pending]
        parsed = await asyncio.to_thread(lambda: [parse(text) for text in texts])
        with self.app.batch_update():
            for placeholder, tokens in zip(pending, parsed, strict=True):
                if placeholder.parent is not self:
                    continue  # removed meanwhile (the window moved on)
                await self.mount_all(self._blocks(placeholder.chunk, tokens), before=placeholder)
                await placeholder.remove()

    def _blocks(self, chunk: Chunk, tokens: list[Token]) -> list[Any]:
        _count(self, chunk.text)
        blocks = markdown_blocks(self, tokens)
        for block in blocks:
            start, end = block.source_range
            block.source_range = (start + chunk.first_line, end + chunk.first_line)
        return blocks


def _count(widget: Widget, text: str) -> None:
    """Tell the app's probes (tests, benchmarks) that `text` was built as Markdown."""
    probes = getattr(widget.app, "probes", None)
    if probes is not None:
        probes.markdown_builds += 1
        probes.markdown_built_chars += len(text)


def parse(text: str) -> list[Token]:
    """Tokens of `text` from the parser Textual's Markdown uses ("gfm-like")."""
    return _parser().parse(text)


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("gfm-like")
