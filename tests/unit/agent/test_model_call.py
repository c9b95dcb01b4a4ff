"""W5: the worker closes the stream it was reading on its own thread, the moment it stops."""

from __future__ import annotations

import threading
from collections.abc import Callable

from agent.drafts import Draft
from agent.model_call import stream_into
from agent.providers.base import Abort, TextPart


class RecordingProvider:
    """Yields text parts forever; records on which thread its stream was closed."""

    def __init__(self) -> None:
        self.closed_on: list[str] = []

    def stream(self, request, abort):
        try:
            while True:
                yield TextPart("x")
        finally:
            self.closed_on.append(threading.current_thread().name)


class SinkFailed(Exception):
    pass


def stream_with(sink, abort: Abort) -> tuple[Callable[[], None], RecordingProvider]:
    """A RecordingProvider and the call that streams it into a Draft through `sink`."""
    fake = RecordingProvider()

    def read() -> None:
        stream_into(Draft(), fake.stream(None, abort), abort, sink, lambda: None, lambda _u: None)

    return read, fake


def test_an_error_in_the_loop_closes_the_stream_before_it_propagates():
    def sink(event) -> None:
        raise SinkFailed

    read, fake = stream_with(sink, Abort())
    try:
        read()
    except SinkFailed:
        # The traceback still holds the loop's frame (and so the generator): without an
        # explicit close, the connection would stay checked out until it is collected.
        assert fake.closed_on == [threading.current_thread().name]
    else:
        raise AssertionError("the sink's error was swallowed")


def test_a_stop_closes_the_stream_on_the_worker_thread():
    abort = Abort()
    seen: list[object] = []

    def sink(event) -> None:
        seen.append(event)
        if len(seen) == 3:
            abort.fire()

    read, fake = stream_with(sink, abort)
    worker = threading.Thread(target=read, name="worker")
    worker.start()
    worker.join(5)
    assert fake.closed_on == ["worker"]
