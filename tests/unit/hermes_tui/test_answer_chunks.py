"""The cut of a long answer into chunks (Z2, H10): whole top-level blocks, and a block over
MAX_BLOCK_CHARS as plain pieces; the same cut for a streamed answer's rest as for the whole."""

from __future__ import annotations

from bench._long_answers import long_answer
from hermes_tui.widgets.answer_chunks import (
    MAX_BLOCK_CHARS,
    PIECE_CHARS,
    is_long,
    line_breaks,
    split,
)


def test_a_one_line_answer_of_megabytes_is_plain_pieces_that_join_to_it():
    """H10: a hostile 1 MB line is long, and is cut into plain pieces, none over PIECE_CHARS."""
    text = "x" * (1024 * 1024)
    assert is_long(text)
    chunks = split(text)
    assert "".join(chunk.text for chunk in chunks) == text
    assert all(chunk.plain and len(chunk.text) <= PIECE_CHARS for chunk in chunks)


def test_an_oversized_block_is_cut_at_line_ends_and_its_neighbours_stay_markdown():
    """H10: a huge fence between paragraphs: the paragraphs stay Markdown chunks, the fence
    becomes plain pieces cut at line ends; first_line counts the lines before each chunk."""
    fence = "```\n" + "".join(f"line {i} of the code\n" for i in range(8000)) + "```\n"
    assert len(fence) > MAX_BLOCK_CHARS
    text = "Before.\n\n" + fence + "\nAfter.\n"
    chunks = split(text)
    assert "".join(chunk.text for chunk in chunks) == text
    assert not chunks[0].plain and chunks[0].text == "Before.\n\n"
    assert not chunks[-1].plain and chunks[-1].text == "After.\n"
    pieces = chunks[1:-1]
    assert all(piece.plain and piece.text.endswith("\n") for piece in pieces)
    for chunk in chunks:
        assert chunk.first_line == line_breaks(text[: text.index(chunk.text)])


def test_ordinary_answers_are_cut_as_before_and_a_rest_cuts_like_the_whole():
    """Z2: no block over the size: chunks of whole blocks, none plain; cutting the rest after
    a chunk (a streamed answer's unfinished part) gives the whole's remaining chunks."""
    text = "".join(long_answer(i) + "\n\n" for i in range(5))
    chunks = split(text)
    assert not any(chunk.plain for chunk in chunks) and len(chunks) > 10
    done = sum(len(chunk.text) for chunk in chunks[:4])
    rest = split(text[done:], first_line=chunks[4].first_line)
    assert rest == chunks[4:]
