"""W5: the worker closes the stream it was reading on its own thread, the moment it stops."""

from __future__ import annotations

import threading

import pytest

from agent.config import Config, ProviderConfig
from agent.loop import Agent, Draft
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


@pytest.fixture
def agent_with(tmp_path):
    def make(sink) -> tuple[Agent, RecordingProvider]:
        provider = ProviderConfig("p", api_key="k", base_url="http://127.0.0.1:9")
        config = Config(home=tmp_path, model="p:m", providers={"p": provider})
        agent = Agent(config, sink=sink, workspace=tmp_path)
        fake = RecordingProvider()
        agent._provider = lambda: fake
        agent._request = lambda: None
        return agent, fake

    return make


def test_an_error_in_the_loop_closes_the_stream_before_it_propagates(agent_with):
    def sink(event) -> None:
        raise SinkFailed

    agent, fake = agent_with(sink)
    try:
        agent._stream_into(Draft(), Abort())
    except SinkFailed:
        # The traceback still holds the loop's frame (and so the generator): without an
        # explicit close, the connection would stay checked out until it is collected.
        assert fake.closed_on == [threading.current_thread().name]
    else:
        raise AssertionError("the sink's error was swallowed")


def test_a_stop_closes_the_stream_on_the_worker_thread(agent_with):
    abort = Abort()
    seen: list[object] = []

    def sink(event) -> None:
        seen.append(event)
        if len(seen) == 3:
            abort.fire()

    agent, fake = agent_with(sink)
    worker = threading.Thread(target=agent._stream_into, args=(Draft(), abort), name="worker")
    worker.start()
    worker.join(5)
    assert fake.closed_on == ["worker"]
