"""Our SSE reader: events however the network cuts the bytes (lines, \\r\\n, UTF-8)."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from agent.providers.sse import SSELimitError, parse_sse

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
