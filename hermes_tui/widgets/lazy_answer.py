"""A stored long answer whose Markdown is built chunk by chunk as it nears the view (Z2).

A 300-line answer is a few hundred Markdown blocks, and mounting them all is what made a
session of long answers take seconds to open. `LazyAnswer` mounts each chunk (answer_chunks.py)
as a blank `PendingChunk` of about its built height, and builds the chunks the transcript says
are near the view, as they are scrolled to. When a session opens, the chunks of its bottom
screen show as plain text in the first frame (one cheap widget each) and are built as
Markdown right after it. Parsing runs off the UI thread (`parse`); only mounting (`mount_parsed`)
is on it.
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


class PlainChunk(Static):
    """A built piece of an oversized block (answer_chunks.MAX_BLOCK_CHARS): its plain text."""

    DEFAULT_CSS = "PlainChunk { width: 1fr; height: auto; }"

    def __init__(self, chunk: Chunk) -> None:
        super().__init__(chunk.text.rstrip("\n"), markup=False)
        self.chunk = chunk


class LazyAnswer(AnswerBlock):
    """A long answer shown as Markdown where it is seen, blank rows of its size elsewhere."""

    releases = False
    """True when built chunks far from the view go back to blank rows (a streamed answer)."""

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

    # Textual's Markdown makes Widget's sync `_on_mount` async, as this does: its dispatch
    # awaits either kind.
    async def _on_mount(self, event: events.Mount) -> None:  # type: ignore[override]
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

    async def parse(self, pending: Sequence[PendingChunk]) -> list[list[Token]]:
        """The tokens of each of `pending` chunks, parsed on a thread (the screen paints on)."""
        chunks = [placeholder.chunk for placeholder in pending]
        hold = getattr(getattr(self.app, "probes", None), "parse_hold", None)

        def parse_all() -> list[list[Token]]:
            if hold is not None:
                hold()
            return [chunk_tokens(chunk) for chunk in chunks]

        return await asyncio.to_thread(parse_all)

    async def mount_parsed(
        self, pending: Sequence[PendingChunk], parsed: Sequence[list[Token]]
    ) -> None:
        """Mount the Markdown of `pending` chunks, parsed as `parsed`, in their places."""
        if not self.is_attached:
            return  # removed while it was parsed (the window moved on)
        with self.app.batch_update():
            for placeholder, tokens in zip(pending, parsed, strict=True):
                if placeholder.parent is not self:
                    continue  # removed meanwhile (the window moved on)
                await self.mount_all(self._blocks(placeholder.chunk, tokens), before=placeholder)
                await placeholder.remove()

    def _blocks(self, chunk: Chunk, tokens: list[Token]) -> list[Any]:
        """The widgets of a built chunk, each tagged with it (`built_chunks`, `release`)."""
        if chunk.plain:
            blocks: list[Any] = [PlainChunk(chunk)]
        else:
            _count(self, chunk.text)
            blocks = markdown_blocks(self, tokens)
            for block in blocks:
                start, end = block.source_range
                block.source_range = (start + chunk.first_line, end + chunk.first_line)
        for block in blocks:
            block.lazy_chunk = chunk
        return blocks

    def built_chunks(self) -> list[list[Widget]]:
        """The widgets of each built chunk, top to bottom (the live tail is no chunk yet)."""
        groups: list[list[Widget]] = []
        for child in self.children:
            chunk = getattr(child, "lazy_chunk", None)
            if chunk is None:
                continue
            # A built chunk's widgets carry `lazy_chunk` (set where they are built), any class.
            if groups and groups[-1][0].lazy_chunk is chunk:  # type: ignore[attr-defined]
                groups[-1].append(child)
            else:
                groups.append([child])
        return groups

    async def release(self, groups: Sequence[list[Widget]]) -> None:
        """Turn built chunks back into blank rows of the height they took (far from view)."""
        with self.app.batch_update():
            for widgets in groups:
                if widgets[0].parent is not self:
                    continue
                chunk = widgets[0].lazy_chunk  # type: ignore[attr-defined]  # see groups()
                height = widgets[-1].virtual_region.bottom - widgets[0].virtual_region.y
                blank = PendingChunk(chunk, max(1, height))
                await self.mount(blank, before=widgets[0])
                await self.remove_children(widgets)


def _count(widget: Widget, text: str) -> None:
    """Tell the app's probes (tests, benchmarks) that `text` was built as Markdown."""
    probes = getattr(widget.app, "probes", None)
    if probes is not None:
        probes.markdown_builds += 1
        probes.markdown_built_chars += len(text)


def chunk_tokens(chunk: Chunk) -> list[Token]:
    """A chunk's tokens (none for a plain piece, which is shown as its text)."""
    return [] if chunk.plain else parse(chunk.text)


def parse(text: str) -> list[Token]:
    """Tokens of `text` from the parser Textual's Markdown uses ("gfm-like")."""
    return _parser().parse(text)


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("gfm-like")
