"""The assistant's answer widget: Markdown, streamed then finalised (imported lazily)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from textual.await_complete import AwaitComplete
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from hermes_tui.safe_text import safe_text
from hermes_tui.textual_compat import block_token, sharing_inline_styles
from hermes_tui.widgets.answer_chunks import block_parser

# Token types that become a top-level block widget (Markdown._parse_markdown); any other
# top-level token (an html block) is dropped by Textual, so it is skipped here as well.
_BLOCK_TOKENS = frozenset(
    {
        "heading_open",
        "hr",
        "paragraph_open",
        "blockquote_open",
        "bullet_list_open",
        "ordered_list_open",
        "table_open",
        "fence",
        "code_block",
    }
)


class AnswerBlock(Markdown):
    """The assistant's visible answer, streamed then finalised as Markdown.

    Every source that reaches it (a streamed piece, the final text, a stored row) is made
    terminal-safe first, so `source`, and with it what the copy key copies, is safe too.
    """

    BLOCKS = {name: sharing_inline_styles(block) for name, block in Markdown.BLOCKS.items()}

    def __init__(self, markdown: str | None = None, **kwargs: Any) -> None:
        # Textual builds a parser per append when given no factory: a new MarkdownIt compiles
        # its rule chains on its first parse, the larger part of a streamed append's cost.
        kwargs.setdefault("parser_factory", _shared_parser)
        super().__init__(markdown, **kwargs)

    def update(self, markdown: str) -> AwaitComplete:
        """Show `markdown` (made terminal-safe) in place of the document."""
        return super().update(safe_text(markdown))

    def append(self, markdown: str) -> AwaitComplete:
        """Append a streamed piece (made terminal-safe) to the document."""
        return super().append(safe_text(markdown))

    async def finalize(self, content: str) -> None:
        """End a stream: make the mounted blocks those a fresh parse of `content` gives.

        Streamed appends update the last block from a re-parse of the tail, so a block can
        keep the type a prefix of its text gave it (a paragraph that became a table, a fence
        or a setext heading): a full `update()` is the safe end of a stream. But re-mounting
        a long answer is the most expensive step of a turn, so when the streamed source is
        the final text and a fresh parse yields exactly the blocks already mounted (type and
        source lines), those blocks are already what `update()` would mount.
        """
        content = safe_text(content)
        if self.source == content and self._blocks_match(content):
            return
        await self.update(content)

    def _blocks_match(self, content: str) -> bool:
        fresh = [_shape(token) for token in block_parser().parse(content) if _is_block(token)]
        blocks = [b for b in self.children if isinstance(b, MarkdownBlock)]
        mounted = [_shape(block_token(b), b.source_range) for b in blocks]
        return fresh == mounted


class AnswerStream:
    """Feeds streamed text into an answer, pacing its updates to the cost of showing them.

    Each update re-lays out and repaints the answer, which costs more the longer it grows
    (hundreds of blocks for a long one). Updating as fast as text arrives would keep the UI
    thread busy all the time: keys would wait behind frames and the worker behind the GIL.
    So after each update the stream rests in proportion to what that update took the UI
    thread (`DUTY` of the thread at most), and text arriving meanwhile goes into the next one.
    A short answer costs a few milliseconds per update and still streams at the frame rate.
    """

    DUTY = 0.3
    """The largest share of the UI thread's time spent showing the streamed text: fewer,
    larger updates leave the worker and the keys more of it (0.3 beat 0.4 and 0.5 in bench
    tmux_stream and ui, measured side by side, with keys echoing no later)."""
    MAX_PAUSE = 0.25
    """The longest rest between two updates, however long one took (seconds)."""
    REFRESH_WAIT = 0.5
    """How long to wait for the repaint that shows an update before measuring without it."""

    def __init__(
        self, answer: Markdown, *, cpu_clock: Callable[[], float] = time.thread_time
    ) -> None:
        self._answer = answer
        self._cpu_clock = cpu_clock
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._stop_requested = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the task that updates the answer."""
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def write(self, text: str) -> None:
        """Queue text for the next update."""
        if self._stop_requested.is_set():
            raise RuntimeError("the answer stream has stopped")
        if text:
            self._pending.append(text)
            self._wake.set()

    async def stop(self) -> None:
        """Show everything written so far at once, then end the stream."""
        self._stop_requested.set()
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None

    def rest_after(self, spent: float) -> float:
        """How long to rest after an update that took `spent` seconds of the UI thread."""
        return min(self.MAX_PAUSE, max(0.0, spent) * (1 - self.DUTY) / self.DUTY)

    async def _run(self) -> None:
        stopping = self._stop_requested.is_set
        while self._pending or not stopping():
            if not self._pending:
                await self._wake.wait()
                self._wake.clear()
                continue
            text = "".join(self._pending)
            self._pending.clear()
            started = self._cpu_clock()
            await self._answer.append(text)
            if stopping():
                continue  # no rest: the rest of the text goes up at once
            # A screen on top of the transcript (help, the palette) holds its repaints back:
            # the wait is bounded, and a stop cuts it short like it cuts a rest.
            await self._until_stopped(self._answer.wait_for_refresh(), self.REFRESH_WAIT)
            rest = self.rest_after(self._cpu_clock() - started)
            if rest > 0:
                await self._until_stopped(asyncio.sleep(rest), rest)

    async def _until_stopped(self, waited: Awaitable[object], timeout: float) -> None:
        """Wait for `waited`, at most `timeout` seconds, and no longer once stop() is called."""
        tasks = (asyncio.ensure_future(waited), asyncio.ensure_future(self._stop_requested.wait()))
        try:
            await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()


def _is_block(token: Token) -> bool:
    return token.level == 0 and token.map is not None and token.type in _BLOCK_TOKENS


BlockShape = tuple[str, str, tuple[int, ...]]
"""A top-level block's token type, tag and source lines."""


def _shape(token: Token, source_range: tuple[int, int] | None = None) -> BlockShape:
    """What decides a top-level block's widget: its token type, tag and source lines."""
    lines = source_range if source_range is not None else tuple(token.map or (0, 0))
    return token.type, token.tag, tuple(lines)


@cache
def _shared_parser() -> MarkdownIt:
    """Textual's own parser ("gfm-like"), built once: parsing leaves it as it was."""
    return MarkdownIt("gfm-like")
