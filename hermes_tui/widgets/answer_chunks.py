"""A long answer cut into runs of whole top-level Markdown blocks, each built on its own (Z2).

Pure text work (no Textual): the cut needs only markdown-it's block rules, so it is cheap
and can run on any thread. Each run parses alone to the same blocks it is part of in the
whole document, because it starts and ends at a top-level block boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import pairwise

from markdown_it import MarkdownIt

CHUNK_LINES = 24
"""Source lines gathered into one chunk (a chunk is built whole, when it nears the view)."""
LAZY_LINES = 2 * CHUNK_LINES
"""An answer longer than this (in source lines) is built chunk by chunk; a shorter one whole."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A run of whole top-level blocks: its text and where it starts in the answer."""

    text: str
    first_line: int
    """The answer's source line this chunk's first line is."""

    def estimated_height(self, width: int) -> int:
        """About how many rows the chunk takes at `width` columns once built as Markdown."""
        width = max(1, width)
        rows = 0
        for line in self.text.splitlines():
            # A blank line stands for the margin between two blocks.
            rows += max(1, -(-len(line) // width))
        return max(1, rows)


def is_long(source: str) -> bool:
    """True when `source` is long enough to be built chunk by chunk."""
    return source.count("\n") > LAZY_LINES


def split(source: str, chunk_lines: int = CHUNK_LINES) -> list[Chunk]:
    """Cut `source` at top-level block boundaries into chunks of about `chunk_lines` lines."""
    lines = source.splitlines(keepends=True)
    starts = sorted({token.map[0] for token in block_parser().parse(source) if _top(token)})
    cuts = [0]
    for start in starts:
        if start - cuts[-1] >= chunk_lines:
            cuts.append(start)
    cuts.append(len(lines))
    return [Chunk("".join(lines[begin:end]), begin) for begin, end in pairwise(cuts) if begin < end]


def _top(token: object) -> bool:
    return getattr(token, "level", 1) == 0 and getattr(token, "map", None) is not None


@cache
def block_parser() -> MarkdownIt:
    """Textual's parser ("gfm-like", as Markdown.update uses) without the inline passes.

    Block structure comes from the block rules alone; inline parsing and linkify (the
    costliest pass) only fill in the text, which the streamed blocks already show.
    """
    parser = MarkdownIt("gfm-like")
    parser.core.ruler.disable(
        ["inline", "linkify", "replacements", "smartquotes", "text_join"], ignoreInvalid=True
    )
    return parser
