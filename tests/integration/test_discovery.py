"""Asking a server what it serves (agent/providers/discovery.py), over real HTTP.

The scripted server plays llama.cpp, vLLM, Ollama and LM Studio with their own endpoints and
JSON; `LLAMA_PROPS` and `LLAMA_MODELS` are what a real llama-server (SmolLM2, `-c 256`)
answered, cut to the fields a client reads.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from agent.config import ProviderConfig
from agent.providers.discovery import (
    SERVERS,
    ModelListing,
    ServerCache,
    ServerFacts,
    list_models,
    list_provider_models,
    probe,
    window_from_listing,
    window_from_ollama_show,
    window_from_props,
)
from agent.scripted import Script, ScriptedServer

MODEL_PATH = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA_PROPS = {
    "default_generation_settings": {"n_ctx": 256, "params": {"n_predict": 64}},
    "total_slots": 1,
    "model_alias": MODEL_PATH,
    "model_path": MODEL_PATH,
    "build_info": "b0-unknown",
}
LLAMA_MODELS = {
    "models": [{"name": MODEL_PATH, "model": MODEL_PATH, "type": "model"}],
    "object": "list",
    "data": [
        {
            "id": MODEL_PATH,
            "aliases": [MODEL_PATH],
            "tags": [],
            "object": "model",
            "created": 1796125907,
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx": 256, "n_ctx_train": 8192},
        }
    ],
}


@pytest.fixture(autouse=True)
def _fresh_answers():
    SERVERS.clear()
    yield
    SERVERS.clear()


@pytest.fixture
def serve():
    servers: list[ScriptedServer] = []

    def start(server: dict, wire: str = "openai") -> ProviderConfig:
        scripted = ScriptedServer(Script.from_dict({"replies": [], "server": server})).start()
        servers.append(scripted)
        url = scripted.openai_base_url if wire == "openai" else scripted.anthropic_base_url
        return ProviderConfig("local", kind=wire, base_url=url, api_key="k")

    yield start
    for scripted in servers:
        scripted.stop()


def test_the_real_llama_server_answers_are_read():
    assert window_from_props(LLAMA_PROPS) == 256
    # A single-model llama-server serves its model whatever name a request gives.
    entries = LLAMA_MODELS["data"]
    assert window_from_listing(entries, "anything") == (256, "llama.cpp /v1/models n_ctx")


def test_ollama_num_ctx_wins_over_the_trained_length():
    show = {
        "parameters": 'num_ctx                        8192\nstop "<|im_end|>"',
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
    }
    assert window_from_ollama_show(show) == 8192
    assert window_from_ollama_show({"model_info": {"llama.context_length": 131072}}) == 131072


@pytest.mark.parametrize(
    ("persona", "model", "source"),
    [
        ("llama.cpp", "smollm2", "llama.cpp /v1/models n_ctx"),
        ("vllm", "Qwen/Qwen2.5-7B-Instruct", "vLLM /v1/models max_model_len"),
        ("lmstudio", "qwen2.5-7b-instruct", "LM Studio /api/v0/models"),
        ("ollama", "qwen2.5:7b", "Ollama /api/show"),
    ],
)
def test_each_server_says_its_window_on_its_own_endpoint(serve, persona, model, source):
    provider = serve({"persona": persona, "models": [model], "context_window": 2048})
    facts = probe(provider, model)
    assert facts.reachable
    assert (facts.context_window, facts.window_source) == (2048, source)
    assert model in (facts.models or ())


def test_llama_cpp_on_the_anthropic_wire_is_asked_at_its_root(serve):
    provider = serve(
        {"persona": "llama.cpp", "models": ["m.gguf"], "context_window": 4096}, "anthropic"
    )
    assert probe(provider, "m.gguf").context_window == 4096


def test_lm_studio_not_loaded_gives_the_models_maximum(serve):
    provider = serve(
        {
            "persona": "lmstudio",
            "models": ["m"],
            "context_window": 4096,
            "extra": {"loaded": False, "max_context_length": 32768},
        }
    )
    assert probe(provider, "m").context_window == 32768


def test_a_server_without_any_of_these_endpoints_knows_nothing(serve):
    provider = serve({})
    facts = probe(provider, "m")
    assert facts == ServerFacts(reachable=True)


def test_models_are_listed_from_v1_models_else_ollama_tags(serve):
    assert list_models(serve({"persona": "vllm", "models": ["a", "b"]})) == ("a", "b")
    ollama = serve({"persona": "ollama", "models": ["qwen2.5:7b", "llama3.2:latest"]})
    assert list_models(ollama) == ("qwen2.5:7b", "llama3.2:latest")
    assert list_models(serve({})) == ()


def test_a_silent_server_costs_one_short_timeout():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # the kernel completes each connection; nobody reads or answers
    try:
        port = listener.getsockname()[1]
        provider = ProviderConfig("slow", base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
        facts = probe(provider, "m", timeout=0.3)
        listener.setblocking(False)
        asked = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                listener.accept()[0].close()
                asked += 1
    finally:
        listener.close()
    # Counted, not timed: one endpoint was asked and its timeout ended the probe; a timeout
    # per endpoint would have asked the next ones too, each on a connection of its own.
    assert asked == 1
    assert not facts.reachable


def test_only_local_or_configured_servers_are_asked():
    asked: list[str] = []

    def prober(config, model, timeout):
        asked.append(config.name)
        return ServerFacts(context_window=1000)

    cache = ServerCache(prober)
    remote = ProviderConfig("remote", base_url="https://api.example.invalid/v1")
    assert cache.facts(remote, "m") is None
    told = ProviderConfig("lan", base_url="http://192.168.1.5:8080/v1", discover=True)
    assert cache.facts(told, "m").context_window == 1000
    local = ProviderConfig("local", base_url="http://localhost:8080/v1")
    off = ProviderConfig("off", base_url="http://127.0.0.1:8080/v1", discover=False)
    cache.facts(local, "m")
    assert cache.facts(off, "m") is None
    assert asked == ["lan", "local"]


def test_each_server_and_model_is_asked_once_and_a_silent_one_again():
    calls: list[str] = []
    gate = threading.Event()

    def prober(config, model, timeout):
        calls.append(model)
        gate.wait(5)
        return ServerFacts(reachable=model != "down", context_window=1000)

    cache = ServerCache(prober)
    local = ProviderConfig("local", base_url="http://127.0.0.1:8080/v1")
    threads = [threading.Thread(target=cache.facts, args=(local, "m")) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join(5)
    assert cache.facts(local, "m").context_window == 1000
    assert calls == ["m"]
    cache.facts(local, "down")
    cache.facts(local, "down")
    assert calls == ["m", "down", "down"]  # a server that did not answer may be starting


def test_a_window_the_server_named_in_an_error_wins():
    cache = ServerCache(lambda config, model, timeout: ServerFacts(context_window=8192))
    local = ProviderConfig("local", base_url="http://127.0.0.1:8080/v1")
    cache.facts(local, "m")
    cache.learn_window(local, "m", 2048, "overflow")
    assert cache.known(local, "m").context_window == 2048


def test_every_configured_provider_is_listed_side_by_side(serve):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    dead_port = sock.getsockname()[1]
    sock.close()
    providers = {
        "vllm": serve({"persona": "vllm", "models": ["Qwen/Qwen2.5-7B-Instruct"]}),
        "ollama": serve({"persona": "ollama", "models": ["qwen2.5:7b"]}),
        "plain": serve({}),
        "dead": ProviderConfig("dead", base_url=f"http://127.0.0.1:{dead_port}/v1"),
    }
    started = time.monotonic()
    listings = list_provider_models(providers, timeout=10)
    # Every server answers (or refuses) at once: none of the 10 s timeouts, nor the 30 s
    # deadline of the side-by-side join, was waited for.
    assert time.monotonic() - started < 8
    by_name = {listing.provider: listing for listing in listings}
    assert [listing.provider for listing in listings] == list(providers)
    assert by_name["vllm"].models == ("Qwen/Qwen2.5-7B-Instruct",)
    assert by_name["ollama"].models == ("qwen2.5:7b",)
    assert by_name["plain"] == ModelListing("plain", (), "the server lists no models")
    assert by_name["dead"].problem == "the server did not answer"


def test_a_server_loading_its_model_is_asked_again_and_its_window_learned_once_ready():
    """Issue 29 item 10: llama-server answers 503 on its metadata routes while it loads its
    model; that answer is not kept, so the next turn asks again and learns the window."""
    from agent.server_check import ServerAsker

    persona = {"persona": "llama.cpp", "models": ["m"], "context_window": 2048}
    loading = {**persona, "extra": {"loading": True}}
    scripted = ScriptedServer(Script.from_dict({"replies": [], "server": loading})).start()
    try:
        config = ProviderConfig("local", base_url=scripted.openai_base_url, api_key="k")
        asker = ServerAsker()
        first = SERVERS.facts(config, "m")
        assert first is not None and first.loading and first.context_window is None
        assert asker.ask(config, "local:m", "m") is None  # not checked yet: ask next turn
        scripted.set_script(Script.from_dict({"replies": [], "server": persona}))
        ready = SERVERS.facts(config, "m")
        assert ready is not None and not ready.loading and ready.context_window == 2048
        assert SERVERS.known(config, "m").context_window == 2048
        assert asker.ask(config, "local:m", "m") is not None
        assert asker.ask(config, "local:m", "m") is None  # checked once, then not again
    finally:
        scripted.stop()
