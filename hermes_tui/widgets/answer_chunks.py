"""A long answer cut into runs of whole top-level Markdown blocks, each built on its own (Z2).

Pure text work (no Textual): the cut needs only markdown-it's block rules, so it is cheap
and can run on any thread. Each run parses alone to the same blocks it is part of in the
whole document, because it starts and ends at a top-level block boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

from markdown_it import MarkdownIt
from markdown_it.token import Token

CHUNK_LINES = 24
"""Source lines gathered into one chunk (a chunk is built whole, when it nears the view)."""
LAZY_LINES = 2 * CHUNK_LINES
"""An answer longer than this (in source lines) is built chunk by chunk; a shorter one whole."""
LAZY_CHARS = 64 * 1024
"""An answer longer than this (in characters) is built chunk by chunk too, however few lines."""
MAX_BLOCK_CHARS = 64 * 1024
"""A top-level block longer than this is shown as its plain text in pieces, not as Markdown:
one widget would hold all of it (a hostile answer is one 4 MB line or an unclosed fence)."""
PIECE_CHARS = 16 * 1024
"""About how long a plain piece of an oversized block is (cut at a line end when near one)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A run of whole top-level blocks: its text and where it starts in the answer."""

    text: str
    first_line: int
    """The answer's source line this chunk's first line is."""
    plain: bool = False
    """A piece of an oversized block: built as its plain text, not as Markdown."""

    def estimated_height(self, width: int) -> int:
        """About how many rows the chunk takes at `width` columns once built as Markdown.

        Close enough that building the chunks near the view rarely brings new ones near it
        (each miss costs the fill another round, Z2): a paragraph's lines wrap as one text,
        a fence's lines do not wrap (its code scrolls), a blank line is a block's margin.
        """
        width = max(1, width)
        if self.plain:  # shown as its text, each line wrapped on its own
            return max(1, sum(max(1, -(-len(line) // width)) for line in self.text.splitlines()))
        rows = 0
        text: list[str] = []  # the block being read: its lines wrap together
        fence = ""
        for line in self.text.splitlines():
            stripped = line.strip()
            if fence:
                rows += 1
                fence = "" if stripped.startswith(fence) else fence
                continue
            starts_block = stripped.startswith(_BLOCK_STARTS) or _NUMBERED.match(stripped)
            if not stripped or starts_block:
                rows += _wrapped(" ".join(text), width)
                text = []
            if not stripped:
                rows += 1  # the margin between two blocks
            elif stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
                rows += 1
            elif stripped.startswith(("# ", "## ")):
                rows += 1 + _wrapped(stripped, width)  # a big heading's wider top margin
            else:
                text.append(stripped)
        return max(1, rows + _wrapped(" ".join(text), width))


_BLOCK_STARTS = ("#", "- ", "* ", "+ ", ">", "|", "```", "~~~")
"""How a line that starts a new block (not a paragraph's next line) begins."""
_NUMBERED = re.compile(r"\d+[.)] ")


def _wrapped(text: str, width: int) -> int:
    """Rows `text` takes wrapped at word ends in `width` columns (0 for no text)."""
    if len(text) <= width:
        return 1 if text else 0
    rows, column = 1, 0
    for word in text.split():
        if column and column + 1 + len(word) <= width:
            column += 1 + len(word)
            continue
        if column:
            rows += 1
        column = len(word)
        while column > width:  # a word longer than the line breaks anywhere
            rows += 1
            column -= width
    return rows


def is_long(source: str) -> bool:
    """True when `source` is long enough to be built chunk by chunk."""
    return len(source) > LAZY_CHARS or source.count("\n") > LAZY_LINES


def split(source: str, chunk_lines: int = CHUNK_LINES, first_line: int = 0) -> list[Chunk]:
    """Cut `source` at top-level block boundaries into chunks of about `chunk_lines` lines;
    a block over MAX_BLOCK_CHARS becomes plain pieces of its own. `first_line` is the line
    of the answer `source` starts at (a streamed answer's unfinished rest)."""
    lines = source.splitlines(keepends=True)
    tokens = block_parser().parse(source)
    starts = sorted({first for token in tokens if (first := _top_line(token)) is not None})
    ends = [0]
    for line in lines:
        ends.append(ends[-1] + len(line))
    bounds = [0, *(start for start in starts if 0 < start < len(lines)), len(lines)]
    chunks: list[Chunk] = []
    begin = 0
    for start, end in pairwise(bounds):
        if ends[end] - ends[start] > MAX_BLOCK_CHARS:
            if start > begin:
                chunks.append(Chunk("".join(lines[begin:start]), first_line + begin))
            chunks.extend(_pieces("".join(lines[start:end]), first_line + start))
            begin = end
        elif start - begin >= chunk_lines:
            chunks.append(Chunk("".join(lines[begin:start]), first_line + begin))
            begin = start
    if begin < len(lines):
        chunks.append(Chunk("".join(lines[begin:]), first_line + begin))
    return chunks


def line_breaks(text: str) -> int:
    """How many line breaks `text` holds (as `str.splitlines` counts them)."""
    return len((text + "x").splitlines()) - 1


def _pieces(block: str, first_line: int) -> list[Chunk]:
    """An oversized block cut into plain pieces of about PIECE_CHARS, at a line end when one
    is in the piece's second half (the same cuts for the same text, streamed or stored)."""
    pieces: list[Chunk] = []
    position = 0
    while position < len(block):
        end = min(len(block), position + PIECE_CHARS)
        if end < len(block):
            newline = block.rfind("\n", position + PIECE_CHARS // 2, end)
            end = newline + 1 if newline >= 0 else end
        piece = block[position:end]
        pieces.append(Chunk(piece, first_line, plain=True))
        first_line += line_breaks(piece)
        position = end
    return pieces


def _top_line(token: Token) -> int | None:
    """The line a top-level block's token starts on; None for any other token."""
    return token.map[0] if token.level == 0 and token.map is not None else None


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
