"""One scripted server per test process: a reset plays a new script as a new server would,
and nothing of the last test's script reaches the next (the suite's shared server)."""

from __future__ import annotations

import threading
import time

import openai
import pytest
from helpers import ScriptedServers, WorkerScriptedServer
from waits import wait_until

from agent.scripted import Script, ScriptedServer


def ask(server: ScriptedServer, text: str = "hi") -> str:
    """One streamed chat completion through the real openai SDK; its text."""
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}], stream=True
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


@pytest.fixture
def worker():
    worker = WorkerScriptedServer()
    yield worker
    worker.close()


def test_a_reset_plays_the_new_script_from_its_start_with_an_empty_log(worker):
    first = worker.load(Script.from_dict({"replies": [{"text": "one"}, {"text": "two"}]}))
    assert ask(first) == "one"
    stale_url = first.openai_base_url
    second = worker.load(Script.from_dict({"replies": [{"text": "fresh"}]}))
    assert second is first and second.openai_base_url != stale_url
    assert second.requests == [] and second.connections_accepted == 0
    assert ask(second) == "fresh"  # not the first script's "two"
    assert [r.path for r in second.requests_for()] == ["/v1/chat/completions"]


def test_a_client_of_the_earlier_script_is_refused_and_plays_nothing(worker):
    """A test's leftover worker cannot take the next test's replies."""
    server = worker.load(Script.from_dict({"replies": [{"text": "old"}]}))
    stale = server.openai_base_url
    server = worker.load(Script.from_dict({"replies": [{"text": "mine"}]}))
    client = openai.OpenAI(base_url=stale, api_key="x", max_retries=0)
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert refused.value.status_code == 410
    assert server.requests == []
    assert ask(server) == "mine"


@pytest.mark.parametrize("hold", [{"gate": "never"}, {"stall": 120}])
def test_a_reset_drops_a_stream_the_earlier_script_holds(worker, hold):
    """A stall or a gate of the last test ends at the reset, as at a stop, and the reset
    does not wait out the stall: given a minute to join the held stream's thread, it took a
    fraction of that (a join that timed out would take the whole minute)."""
    server = worker.load(Script.from_dict({"replies": [{"text": "held", **hold}]}))
    ended = threading.Event()

    def held() -> None:
        try:
            ask(server)
        except openai.APIError:
            pass
        ended.set()

    threading.Thread(target=held, daemon=True).start()
    wait_until(lambda: server.requests, what="the held request at the server")
    held_threads = [thread for thread in server._threads if thread.is_alive()]
    started = time.monotonic()
    server.reset(Script.from_dict({"replies": [{"text": "next"}]}), timeout=60)
    assert time.monotonic() - started < 15  # the reset's join did not time out (60 s)
    assert held_threads and not any(thread.is_alive() for thread in held_threads)
    assert ended.wait(10), "the held stream outlived the reset"


def test_a_stopped_worker_server_is_replaced_and_a_second_server_is_the_tests_own(worker):
    server = worker.load(Script.from_dict({"replies": [{"text": "a"}]}))
    server.stop()  # a test that takes its server down
    again = worker.load(Script.from_dict({"replies": [{"text": "b"}]}))
    assert again is not server and ask(again) == "b"
    servers = ScriptedServers(worker)
    shared = servers.start(Script.from_dict({"replies": [{"text": "c"}]}))
    own = servers.start(Script.from_dict({"replies": [{"text": "d"}]}))
    assert shared is again and own is not shared
    assert (ask(shared), ask(own)) == ("c", "d")
    servers.close()
    assert own.stopped and not shared.stopped
