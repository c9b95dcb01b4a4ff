"""A stored long answer whose Markdown is built chunk by chunk as it nears the view (Z2).

A 300-line answer is a few hundred Markdown blocks, and mounting them all is what made a
session of long answers take seconds to open. `LazyAnswer` cuts the answer into chunks
(answer_chunks.py) and mounts each run of chunks not built yet as ONE blank `PendingChunk` of
their summed estimated heights (a widget per chunk made a 1 MB session's open mount, style and
lay out hundreds of placeholders). When the transcript says part of a run is near the view,
that run is split: the chunks near the view are built, and the chunks before and after stay
blank runs of exactly the rows they took, so nothing on screen moves. Built chunks that fall
far from the view (the transcript's fill says which) go back to blank rows the same way,
joined with the runs next to them: scrolling through a long session keeps a few screens of
Markdown mounted, not every chunk it passed (each scroll laid those out again). When a
session opens, the chunks of its bottom screen show as plain text in the first frame (one
cheap widget each) and are built as Markdown right after it. Parsing runs off the UI thread
(`parse`); only mounting (`mount_parsed`) is on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from textual import events
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.probes import probe
from hermes_tui.safe_text import safe_text
from hermes_tui.textual_compat import being_removed, markdown_blocks
from hermes_tui.widgets.answer import AnswerBlock
from hermes_tui.widgets.answer_chunks import Chunk, split


class PendingChunk(Static):
    """Chunks of an answer not built yet: one chunk's plain text (`heights` None), else a run
    of chunks as blank rows, each chunk about its built height (`heights`)."""

    DEFAULT_CSS = "PendingChunk { width: 1fr; height: auto; }"

    def __init__(self, chunks: Sequence[Chunk], heights: Sequence[int] | None) -> None:
        text = "" if heights is not None else "".join(chunk.text for chunk in chunks)
        super().__init__(text.rstrip("\n"), markup=False)
        self.chunks = tuple(chunks)
        self.heights = None if heights is None else tuple(heights)
        if self.heights is not None:
            self.styles.height = sum(self.heights)

    @property
    def blank(self) -> bool:
        """True for blank rows (not plain text)."""
        return self.heights is not None

    def part(self, start: int, end: int) -> PendingChunk:
        """A blank run of this run's chunks `start` to `end`, at the heights they had here."""
        assert self.heights is not None, "a plain placeholder is built whole, never split"
        return PendingChunk(self.chunks[start:end], self.heights[start:end])

    def near(self, top: int, bottom: int) -> Wanted | None:
        """The run's chunks whose rows overlap screen rows `top` to `bottom` (all of a plain
        one), or None when none do."""
        region = self.region
        if not region.height or region.y >= bottom or region.bottom <= top:
            return None
        if self.heights is None:
            return Wanted(self, 0, len(self.chunks))
        start = end = None
        y = region.y
        for index, height in enumerate(self.heights):
            if y < bottom and y + height > top:
                start = index if start is None else start
                end = index + 1
            y += height
        return None if start is None or end is None else Wanted(self, start, end)


@dataclass(frozen=True, slots=True)
class Wanted:
    """The chunks `start` to `end` of a placeholder, to be built (they near the view)."""

    placeholder: PendingChunk
    start: int
    end: int

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks to build."""
        return self.placeholder.chunks[self.start : self.end]


class PlainChunk(Static):
    """A built piece of an oversized block (answer_chunks.MAX_BLOCK_CHARS): its plain text."""

    DEFAULT_CSS = "PlainChunk { width: 1fr; height: auto; }"

    def __init__(self, chunk: Chunk) -> None:
        super().__init__(chunk.text.rstrip("\n"), markup=False)
        self.chunk = chunk


class LazyAnswer(AnswerBlock):
    """A long answer shown as Markdown where it is seen, blank rows of its size elsewhere."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._markdown = safe_text(text)
        self._chunks: list[Chunk] | None = None
        # The chunks shown as plain text until they are built (the bottom screen on opening).
        self._plain: set[int] = set()
        self._width = 80
        self._heights: list[int] | None = None

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
        self._heights = heights = [chunk.estimated_height(width) for chunk in self.chunks]
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
        await self.mount_all(self._placeholders())

    def _placeholders(self) -> list[PendingChunk]:
        """A plain placeholder for each chunk shown as text, one blank run for the rest
        between them."""
        heights = self._heights or [chunk.estimated_height(self._width) for chunk in self.chunks]
        placeholders: list[PendingChunk] = []
        start = 0
        for index in [*sorted(self._plain), len(self.chunks)]:
            if index > start:
                placeholders.append(PendingChunk(self.chunks[start:index], heights[start:index]))
            if index < len(self.chunks):
                placeholders.append(PendingChunk([self.chunks[index]], None))
            start = index + 1
        return placeholders

    @property
    def pending(self) -> list[PendingChunk]:
        """The placeholders of chunks not built yet, top to bottom."""
        return [child for child in self.children if isinstance(child, PendingChunk)]

    def wanted(self, top: int, bottom: int) -> list[Wanted]:
        """The chunks not built yet whose rows overlap screen rows `top` to `bottom`."""
        near = (placeholder.near(top, bottom) for placeholder in self.pending)
        return [wanted for wanted in near if wanted is not None]

    async def parse(self, wanted: Sequence[Wanted]) -> list[list[list[Token]]]:
        """The tokens of each `wanted` chunk, parsed on a thread (the screen paints on)."""
        runs = [wanted_run.chunks for wanted_run in wanted]
        hold = probe(self.app, "parse_hold")

        def parse_all() -> list[list[list[Token]]]:
            if hold is not None:
                hold()
            return [[chunk_tokens(chunk) for chunk in run] for run in runs]

        return await asyncio.to_thread(parse_all)

    async def mount_parsed(
        self, wanted: Sequence[Wanted], parsed: Sequence[list[list[Token]]]
    ) -> None:
        """Mount the Markdown of the `wanted` chunks, parsed as `parsed`, in their places; the
        rest of each run stays blank rows of the heights it had (the view does not move)."""
        # Under the answer's lock: a streamed answer's end may cut it again meanwhile, and a
        # placeholder it is removing still has this parent until the removal is done.
        async with self.lock:
            if self.is_attached:  # else removed while it was parsed (the window moved on)
                await self._mount_parsed(wanted, parsed)

    async def _mount_parsed(
        self, wanted: Sequence[Wanted], parsed: Sequence[list[list[Token]]]
    ) -> None:
        with self.app.batch_update():
            for run, tokens in zip(wanted, parsed, strict=True):
                placeholder = run.placeholder
                if not _ours(self, placeholder):
                    continue  # removed meanwhile (the window moved on, the stream ended)
                widgets: list[Widget] = []
                if run.start > 0:
                    widgets.append(placeholder.part(0, run.start))
                for chunk, chunk_tokens_ in zip(run.chunks, tokens, strict=True):
                    widgets.extend(self._blocks(chunk, chunk_tokens_))
                if run.end < len(placeholder.chunks):
                    widgets.append(placeholder.part(run.end, len(placeholder.chunks)))
                await self.mount_all(widgets, before=placeholder)
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
        """Turn built chunks back into blank rows of the height they took (far from view),
        joined with a blank run next to them (one widget, however many chunks)."""
        async with self.lock:  # as mount_parsed: never into a cut being replaced
            await self._release(groups)

    async def _release(self, groups: Sequence[list[Widget]]) -> None:
        with self.app.batch_update():
            for widgets in groups:
                if not all(_ours(self, widget) for widget in widgets):
                    continue  # removed meanwhile (the stream ended, the cut was replaced)
                chunk = widgets[0].lazy_chunk  # type: ignore[attr-defined]  # see groups()
                doomed = list(widgets)
                chunks, heights = [chunk], [self._rows_taken(widgets)]
                above, below = (
                    self._blank_next_to(widgets[0], -1),
                    self._blank_next_to(widgets[-1], 1),
                )
                if above is not None:
                    doomed.insert(0, above)
                    chunks[:0], heights[:0] = above.chunks, above.heights or ()
                if below is not None:
                    doomed.append(below)
                    chunks += below.chunks
                    heights += below.heights or ()
                await self.mount(PendingChunk(chunks, heights), before=doomed[0])
                await self.remove_children(doomed)

    def _rows_taken(self, widgets: Sequence[Widget]) -> int:
        """The rows a blank run (no margin) takes in place of `widgets` without moving what
        is below them: their own and the margins between them and their neighbours that a
        neighbour's margin does not cover (Textual collapses vertical margins to the larger
        one; the span of the widgets alone lost a row at each such gap)."""
        children = self.children
        first, last = children.index(widgets[0]), children.index(widgets[-1])
        if first > 0:
            above = children[first - 1]
            top = above.virtual_region.bottom + above.styles.margin.bottom
        else:
            top = widgets[0].virtual_region.y - widgets[0].styles.margin.top
        if last + 1 < len(children):
            below = children[last + 1]
            bottom = below.virtual_region.y - below.styles.margin.top
        else:
            bottom = widgets[-1].virtual_region.bottom + widgets[-1].styles.margin.bottom
        return max(1, bottom - top)

    def _blank_next_to(self, widget: Widget, step: int) -> PendingChunk | None:
        """The blank run just above (`step` -1) or below (+1) `widget`, if there is one."""
        children = self.children
        index = children.index(widget) + step
        if 0 <= index < len(children):
            sibling = children[index]
            if isinstance(sibling, PendingChunk) and sibling.blank and _ours(self, sibling):
                return sibling
        return None


def _ours(answer: LazyAnswer, widget: Widget) -> bool:
    """True when `widget` is one of the answer's and not being removed (a widget keeps its
    parent until its removal is done, and what is mounted next to it then stays)."""
    return widget.parent is answer and not being_removed(widget)


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
