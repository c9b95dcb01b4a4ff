"""Our SSE reader against the WHATWG event-stream examples, as a conformance table.

Each row is a stream and the events the HTML standard's parsing rules give for it
(https://html.spec.whatwg.org/multipage/server-sent-events.html, "Parsing an event
stream" and its examples), cut at every byte and fed whole. One deliberate difference is
a row of its own: a last event with no blank line after it is yielded, not discarded
(A1: the stream of every provider reads the same).
"""

from __future__ import annotations

import pytest

from agent.providers.sse import parse_sse

TABLE = [
    # The standard's first example: several data lines join with newlines.
    ("data: YHOO\ndata: +2\ndata: 10\n\n", [("", "YHOO\n+2\n10")]),
    # Its second: a comment, ids (ignored here), no space after the colon, two spaces.
    (
        ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
        "data:  third event\n\n",
        [("", "first event"), ("", "second event"), ("", " third event")],
    ),
    # Its third: a bare `data` line is a data field with an empty value.
    ("data\n\ndata\ndata\n\n", [("", ""), ("", "\n")]),
    # Its fourth: the space after the colon is optional, and only one is dropped.
    ("data:test\n\ndata: test\n\n", [("", "test"), ("", "test")]),
    # The event field: one leading space dropped, the rest of the value kept as sent.
    ("event: add\ndata: 1\n\n", [("add", "1")]),
    ("event:add\ndata: 1\n\n", [("add", "1")]),
    ("event:  two spaces \ndata: 1\n\n", [(" two spaces ", "1")]),
    ("event\ndata: 1\n\n", [("", "1")]),
    # The event type lasts for one event only.
    ("event: a\ndata: 1\n\ndata: 2\n\n", [("a", "1"), ("", "2")]),
    # No data field, no event: an event type alone dispatches nothing.
    ("event: ping\n\n", []),
    # Unknown fields and fields without a colon are ignored.
    ("retry: 10\nfoo: bar\nbaz\ndata: x\n\n", [("", "x")]),
    # A byte order mark opens the stream at most once.
    ("\ufeffdata: x\n\n", [("", "x")]),
    ("\ufeffdata: x\n\n\ufeffdata: y\n\n", [("", "x")]),
    # CR, LF and CRLF all end lines.
    ("data: a\r\rdata: b\r\n\r\ndata: c\n\n", [("", "a"), ("", "b"), ("", "c")]),
    # Ours: a last event with no blank line after it is kept (the standard discards it).
    ("data: a\n\ndata: last", [("", "a"), ("", "last")]),
]


@pytest.mark.parametrize(("stream", "events"), TABLE, ids=[repr(row[0][:24]) for row in TABLE])
def test_the_standard_examples_give_the_standard_events(stream, events):
    """A1: the WHATWG examples, whole and cut at every byte."""
    raw = stream.encode()
    assert list(parse_sse([raw])) == events
    for cut in range(1, len(raw)):
        assert list(parse_sse([raw[:cut], raw[cut:]])) == events, cut
    assert list(parse_sse([raw[i : i + 1] for i in range(len(raw))])) == events
