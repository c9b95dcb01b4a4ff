"""Our SSE reader: events however the network cuts the bytes (lines, \\r\\n, UTF-8)."""

from __future__ import annotations

import random

from agent.providers.sse import parse_sse

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
