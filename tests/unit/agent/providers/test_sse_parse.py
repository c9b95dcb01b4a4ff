"""Our SSE reader: events however the network cuts the bytes (lines, \\r\\n, UTF-8)."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from agent.providers.sse import MAX_SSE_LINE_BYTES, SSELimitError, iter_sse, parse_sse

STREAM = (
    ": keep-alive\n\n"
    'data: {"text": "héllo wörld ✓"}\n\n'
    "event: message_delta\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "data: line one\r"
    "data: line two\r"
    "\r"
    "data: [DONE]\n\n"
).encode()

EXPECTED = [
    ("", '{"text": "héllo wörld ✓"}'),
    ("message_delta", '{"a": 1}'),
    ("", "line one\nline two"),
    ("", "[DONE]"),
]


def test_whole_stream():
    assert list(parse_sse([STREAM])) == EXPECTED


def test_every_cut_of_the_stream_gives_the_same_events():
    # Cutting between \r and \n, inside a UTF-8 character or inside "data:" changes nothing.
    for cut in range(1, len(STREAM)):
        assert list(parse_sse([STREAM[:cut], STREAM[cut:]])) == EXPECTED, cut


def test_random_chunking_and_byte_at_a_time():
    rng = random.Random(7)
    for _ in range(200):
        chunks, at = [], 0
        while at < len(STREAM):
            step = rng.randint(1, 9)
            chunks.append(STREAM[at : at + step])
            at += step
        assert list(parse_sse(chunks)) == EXPECTED
    assert list(parse_sse([bytes([b]) for b in STREAM])) == EXPECTED


def test_an_unterminated_last_event_is_still_returned():
    # The caller decides whether a stream without its finish is truncated (W10).
    assert list(parse_sse([b'data: {"x": 1}\n\ndata: {"y": 2}'])) == [
        ("", '{"x": 1}'),
        ("", '{"y": 2}'),
    ]


# ---------------------------------------------------------------- bounds (SPEC H6)

CAP = 1000


def test_a_line_at_the_cap_passes_and_one_byte_more_fails():
    line = b"data: " + b"x" * (CAP - 6)
    assert list(parse_sse([line + b"\n\n"], max_line=CAP)) == [("", "x" * (CAP - 6))]
    with pytest.raises(SSELimitError):
        list(parse_sse([line + b"y\n\n"], max_line=CAP))


@pytest.mark.parametrize("size", [1, 7, 999, 1001, 5000])
def test_the_cap_holds_however_the_line_is_cut(size):
    stream = b"data: " + b"x" * (3 * CAP) + b"\n\n"
    chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
    with pytest.raises(SSELimitError):
        list(parse_sse(chunks, max_line=CAP))


def test_a_line_without_end_is_refused_not_buffered_forever():
    # An endless line: the parser must give up at the cap, whatever comes next.
    with pytest.raises(SSELimitError):
        for _ in parse_sse(itertools.repeat(b"x" * 64), max_line=CAP):
            pass


def test_many_data_lines_of_one_event_share_the_cap():
    line = b"data: " + b"x" * 300 + b"\n"
    assert len(list(parse_sse([line * 3 + b"\n"], max_line=CAP))) == 1
    with pytest.raises(SSELimitError):
        list(parse_sse([line * 4 + b"\n"], max_line=CAP))
    # Events apart from each other each have the whole cap.
    assert len(list(parse_sse([(line * 3 + b"\n") * 5], max_line=CAP))) == 5


def test_a_long_line_costs_linear_time():
    # The old reader copied its whole buffer for every chunk of a long line (quadratic):
    # a 6 MB line in 1 KB chunks took seconds, against milliseconds for 6 MB of short lines.
    size, piece = 6 * 1024 * 1024, 1024
    long_line = [b"data: "] + [b"x" * piece] * (size // piece) + [b"\n\n"]
    short = b"data: " + b"x" * (piece - 9) + b"\n\n"
    short_lines = [short] * (size // piece)

    def timed(chunks) -> float:
        start = time.perf_counter()
        for _ in parse_sse(chunks, max_line=2 * size):
            pass
        return time.perf_counter() - start

    short_time = min(timed(short_lines) for _ in range(3))
    long_time = min(timed(long_line) for _ in range(3))
    assert long_time < 5 * short_time + 0.05, (long_time, short_time)


# ---------------------------------------------------------------- the SSE format's corners


def test_the_space_after_the_colon_is_optional():
    # "data:x" and "event:x" are as valid as "data: x"; only one leading space is dropped.
    stream = b"event:delta\ndata:{}\n\nevent: spaced\ndata:  two spaces\n\n"
    assert list(parse_sse([stream])) == [("delta", "{}"), ("spaced", " two spaces")]


def test_invalid_utf8_is_replaced_never_raised():
    # A decode error would escape the retry logic as an unknown failure (W11 retries chunks
    # that do not parse; the JSON decoder then sees U+FFFD, not a UnicodeDecodeError).
    stream = b'data: {"t": "caf\xc3"}\n\ndata: \xff\xfe ok\n\n'
    assert list(parse_sse([stream])) == [("", '{"t": "caf\ufffd"}'), ("", "\ufffd\ufffd ok")]


def test_an_event_is_yielded_as_soon_as_its_blank_line_arrives():
    seen: list[tuple[str, str]] = []

    def chunks():
        yield b"data: first\n"
        yield b"\n"
        assert seen == [("", "first")], "the event waited for more bytes"
        yield b"data: second\n\n"
        assert seen == [("", "first"), ("", "second")]

    for pair in parse_sse(chunks()):
        seen.append(pair)
    assert len(seen) == 2


def test_multi_line_data_of_an_unterminated_last_event_is_joined():
    assert list(parse_sse([b"event: e\ndata: one\ndata: two"])) == [("e", "one\ntwo")]


def test_iter_sse_reads_the_responses_bytes():
    class Response:
        def iter_bytes(self):
            return iter([b"data: a\n", b"\ndata: b\n\n"])

    assert list(iter_sse(Response())) == [("", "a"), ("", "b")]


def test_the_limit_error_names_the_cap_in_megabytes():
    assert str(SSELimitError(MAX_SSE_LINE_BYTES)) == "a stream line over 8 MB"
    assert str(SSELimitError(3 * 1024 * 1024 + 5)) == "a stream line over 3 MB"


def test_a_line_that_reaches_the_cap_while_pending_still_passes():
    # Exactly the cap, with its end in the next chunk: not over the cap.
    line = b"data: " + b"x" * (CAP - 6)
    assert list(parse_sse([line, b"\n\n"], max_line=CAP)) == [("", "x" * (CAP - 6))]


def test_lines_at_the_cap_inside_and_at_the_end_of_a_chunk_pass():
    at_cap = b"data: " + b"y" * (CAP - 6)
    # A line at the cap between two others, in one chunk longer than the cap.
    stream = b"data: a\n\n" + at_cap + b"\n\n"
    assert list(parse_sse([stream], max_line=CAP)) == [("", "a"), ("", "y" * (CAP - 6))]
    # The same line as the unfinished rest of a chunk.
    assert list(parse_sse([b"data: a\n\n" + at_cap, b"\n\n"], max_line=CAP)) == [
        ("", "a"),
        ("", "y" * (CAP - 6)),
    ]


def test_data_lines_adding_up_to_the_cap_pass():
    # The first line counts its value, the others their raw value (space included).
    first, second = b"data: " + b"x" * 500, b"data: " + b"x" * (CAP - 501)
    (event,) = parse_sse([first + b"\n" + second + b"\n\n"], max_line=CAP)
    assert event == ("", "x" * 500 + "\n" + "x" * (CAP - 501))
    with pytest.raises(SSELimitError):
        list(parse_sse([first + b"\n" + second + b"x\n\n"], max_line=CAP))


def _then_fail(*chunks: bytes):
    """The chunks, then a failure: the parser must refuse before it reads any further."""
    yield from chunks
    raise AssertionError("the parser read past a line over the cap")


@pytest.mark.parametrize(
    "chunk",
    [
        b"data: a\n" + b"x" * (CAP + 1),  # the unfinished rest of the chunk
        b"data: a\n" + b"y" * (CAP + 1) + b"\n",  # a line in the middle of the chunk
        b"data: a\n\n" + b"y" * (CAP + 1) + b"\ndata: b\n",  # the second of several
    ],
)
def test_a_line_over_the_cap_is_refused_at_once(chunk):
    with pytest.raises(SSELimitError):
        list(parse_sse(_then_fail(chunk), max_line=CAP))
