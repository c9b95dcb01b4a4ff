"""What a model server says about itself: the models it lists and a model's context window.

Servers are asked only when they are on this machine, or when their provider says
`discover: true`: lazily (the first turn that uses them, on the agent's worker thread, never
the UI thread nor the start-up path), with a short timeout, once per server and model for the
process (`SERVERS`). llama.cpp, vLLM, Ollama and LM Studio each answer on an endpoint of their
own; the first that knows the model's window wins:

- `GET /v1/models` (every OpenAI-compatible server): the listing; vLLM's `max_model_len`,
  llama.cpp's `meta.n_ctx`
- `GET /props` (llama.cpp): `default_generation_settings.n_ctx`
- `GET /api/v0/models` (LM Studio): `loaded_context_length`, else `max_context_length`
- `POST /api/show` (Ollama): `num_ctx` in `parameters`, else `model_info["<arch>.context_length"]`
- `GET /api/tags` (Ollama): the listing, when `/v1/models` gives none
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from agent.config import ProviderConfig
from agent.version import USER_AGENT

log = logging.getLogger("hermes_tui.discovery")

PROBE_TIMEOUT_SECONDS = 1.5
"""Each question to a server waits at most this long: a server that is slower is not local."""
ANTHROPIC_VERSION = "2023-06-01"
LLAMA_CPP = "llama.cpp"
VLLM = "vLLM"
OLLAMA = "Ollama"
LM_STUDIO = "LM Studio"


@dataclass(frozen=True)
class ServerFacts:
    """What one server said about one model; `models` None: it lists none."""

    reachable: bool = True
    server: str = ""
    """Which server answered (llama.cpp, vLLM, Ollama, LM Studio), when it said."""
    models: tuple[str, ...] | None = None
    context_window: int | None = None
    window_source: str = ""
    """Where the window came from, e.g. "llama.cpp /props"."""
    loading: bool = False
    """It answered 503 (still loading its model) where it would say its window: ask later."""

    @property
    def answers_any_model(self) -> bool:
        """True for a single-model llama-server: it answers whatever model a request names."""
        return self.server == LLAMA_CPP and self.models is not None and len(self.models) == 1


class Unreachable(Exception):
    """The server did not answer at all (refused, timed out, not HTTP)."""


def may_probe(config: ProviderConfig) -> bool:
    """Servers on this machine are asked, others only with `discover: true`."""
    if config.discover is not None:
        return bool(config.discover)
    return config.is_local


DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
"""Where each wire's SDK sends requests when a provider names no base_url."""


def base_url(config: ProviderConfig) -> str:
    """The provider's base_url, or its SDK's default."""
    return config.base_url or DEFAULT_BASE_URLS.get(config.kind, "")


def host(config: ProviderConfig) -> str:
    """The host name the provider's requests go to, lower-cased."""
    return (urlsplit(base_url(config)).hostname or "").lower()


def server_root(config: ProviderConfig) -> str:
    """The server's own root URL: `base_url` without a trailing `/v1`."""
    url = base_url(config).rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def models_url(config: ProviderConfig) -> str:
    """Where the server lists its models (the OpenAI SDK's base_url already ends in /v1)."""
    if config.kind == "anthropic":
        return f"{server_root(config)}/v1/models"
    return f"{base_url(config).rstrip('/')}/models"


def model_listed(models: tuple[str, ...], model: str) -> bool:
    """Whether `model` is one of `models` (Ollama's `name` means `name:latest`)."""
    if model in models:
        return True
    return ":" not in model and f"{model}:latest" in models


# -- reading what each server says ------------------------------------------------------------


def _positive(value: Any) -> int | None:
    """A context size as an int, or None for anything that is not a positive number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value) or None
    return None


def listing_entries(body: Any) -> list[dict[str, Any]]:
    """The model entries of a `/v1/models` (`data`) or Ollama `/api/tags` (`models`) body."""
    if not isinstance(body, dict):
        return []
    entries = body.get("data")
    if not isinstance(entries, list):
        entries = body.get("models")
    return [e for e in entries or () if isinstance(e, dict)]


def listed_ids(entries: list[dict[str, Any]]) -> tuple[str, ...]:
    """Every name the entries answer to: ids, Ollama names, llama.cpp aliases."""
    names: list[str] = []
    for entry in entries:
        for key in ("id", "name", "model"):
            value = entry.get(key)
            if isinstance(value, str) and value and value not in names:
                names.append(value)
        for alias in entry.get("aliases") or ():
            if isinstance(alias, str) and alias and alias not in names:
                names.append(alias)
    return tuple(names)


def listing_server(entries: list[dict[str, Any]]) -> str:
    """The server a `/v1/models` listing comes from, when its `owned_by` says so."""
    owners = {e.get("owned_by") for e in entries}
    if "llamacpp" in owners:
        return LLAMA_CPP
    if "vllm" in owners:
        return VLLM
    return ""


def _entry_for(entries: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    """The entry that names `model`; the only entry of a single-model server otherwise."""
    for entry in entries:
        if model_listed(listed_ids([entry]), model):
            return entry
    if len(entries) == 1 and listing_server(entries) == LLAMA_CPP:
        return entries[0]  # a single-model llama-server serves that model whatever the name
    return None


def window_from_listing(entries: list[dict[str, Any]], model: str) -> tuple[int, str] | None:
    """vLLM's `max_model_len` or llama.cpp's `meta.n_ctx` for `model` in a `/v1/models` list."""
    entry = _entry_for(entries, model)
    if entry is None:
        return None
    window = _positive(entry.get("max_model_len"))
    if window:
        return window, f"{VLLM} /v1/models max_model_len"
    meta = entry.get("meta")
    window = _positive(meta.get("n_ctx")) if isinstance(meta, dict) else None
    if window:
        return window, f"{LLAMA_CPP} /v1/models n_ctx"
    return None


def window_from_props(body: Any) -> int | None:
    """llama.cpp `/props`: the slots' context size, `default_generation_settings.n_ctx`."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def window_from_lmstudio(body: Any, model: str) -> int | None:
    """LM Studio `/api/v0/models`: the loaded context length, else the model's maximum."""
    for entry in listing_entries(body):
        if entry.get("id") == model:
            return _positive(entry.get("loaded_context_length")) or _positive(
                entry.get("max_context_length")
            )
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def window_from_ollama_show(body: Any) -> int | None:
    """Ollama `/api/show`: `num_ctx` of the model's parameters, else its trained length."""
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str):
        match = _NUM_CTX.search(parameters)
        if match:
            return _positive(match.group(1))
    info = body.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if isinstance(key, str) and key.endswith(".context_length"):
                window = _positive(value)
                if window:
                    return window
    return None


# -- asking ------------------------------------------------------------------------------------


class _Asker:
    """One probe's HTTP client: GET or POST JSON with the provider's headers and key."""

    def __init__(self, config: ProviderConfig, timeout: float) -> None:
        import httpx2

        from agent.providers.wire import build_http_client

        self.config = config
        self.client = build_http_client(timeout=httpx2.Timeout(timeout), ca_file=config.ca_file)
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json", **config.headers}
        key = config.resolved_key()
        if key and config.kind == "anthropic":
            headers.update({"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION})
        elif key:
            headers["Authorization"] = f"Bearer {key}"
        self.headers = headers
        self.unavailable = False
        """Some endpoint answered 503: the server is up but not ready (loading a model)."""

    def json(self, method: str, url: str, body: Any = None) -> Any:
        """The JSON an endpoint answers, None for an error status or a body that is not JSON."""
        import httpx2

        try:
            response = self.client.request(method, url, headers=self.headers, json=body)
        except (httpx2.HTTPError, OSError) as exc:
            raise Unreachable(type(exc).__name__) from None
        if response.status_code >= 400:
            self.unavailable = self.unavailable or response.status_code == 503
            return None
        try:
            return response.json()
        except (ValueError, RecursionError):
            return None

    def close(self) -> None:
        self.client.close()


def list_models(config: ProviderConfig, timeout: float = PROBE_TIMEOUT_SECONDS) -> tuple[str, ...]:
    """The models a provider's server lists (`/v1/models`, else Ollama `/api/tags`).

    Raises Unreachable when the server does not answer; an empty tuple means it lists none.
    """
    asker = _Asker(config, timeout)
    try:
        entries = listing_entries(asker.json("GET", models_url(config)))
        if not entries:
            entries = listing_entries(asker.json("GET", f"{server_root(config)}/api/tags"))
        return listed_ids(entries)
    finally:
        asker.close()


@dataclass(frozen=True)
class ModelListing:
    """One provider's models for `/model`, or why there are none to show (`problem`)."""

    provider: str
    models: tuple[str, ...] = ()
    problem: str | None = None


def list_provider_models(
    providers: dict[str, ProviderConfig], timeout: float = PROBE_TIMEOUT_SECONDS
) -> list[ModelListing]:
    """Every configured provider's models, asked side by side with a short timeout each.

    For `/model` with no argument: the user asked, so hosted providers are listed too.
    """
    results: dict[str, ModelListing] = {}

    def ask(name: str, config: ProviderConfig) -> None:
        try:
            models = list_models(config, timeout)
        except Unreachable:
            results[name] = ModelListing(name, problem="the server did not answer")
            return
        except Exception as exc:  # one provider's failure never hides the others
            results[name] = ModelListing(name, problem=type(exc).__name__)
            return
        results[name] = ModelListing(name, models, None if models else "the server lists no models")

    threads = [
        threading.Thread(target=ask, args=(name, config), name="hermes-models", daemon=True)
        for name, config in providers.items()
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout * 3  # one listing asks two endpoints at most
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = ModelListing("", problem="the server did not answer in time")
    return [results.get(name, replace(late, provider=name)) for name in providers]


def probe(
    config: ProviderConfig, model: str, timeout: float = PROBE_TIMEOUT_SECONDS
) -> ServerFacts:
    """Ask a server about `model`: its listing and the model's context window."""
    asker = _Asker(config, timeout)
    try:
        facts = _probe(asker, config, model)
        if asker.unavailable and facts.context_window is None:
            log.info("%s is not ready (503): asked again later", config.name)
            return replace(facts, loading=True)
        return facts
    except Unreachable as exc:
        log.info("%s did not answer discovery (%s)", config.name, exc)
        return ServerFacts(reachable=False)
    finally:
        asker.close()


def _probe(asker: _Asker, config: ProviderConfig, model: str) -> ServerFacts:
    root = server_root(config)
    entries = listing_entries(asker.json("GET", models_url(config)))
    server = listing_server(entries)
    if not entries:
        entries = listing_entries(asker.json("GET", f"{root}/api/tags"))
        server = OLLAMA if entries else ""
    facts = ServerFacts(server=server, models=listed_ids(entries) if entries else None)
    found = window_from_listing(entries, model)
    if found:
        return replace(facts, context_window=found[0], window_source=found[1])
    window = window_from_props(asker.json("GET", f"{root}/props"))
    if window:
        return replace(
            facts, server=LLAMA_CPP, context_window=window, window_source=f"{LLAMA_CPP} /props"
        )
    window = window_from_lmstudio(asker.json("GET", f"{root}/api/v0/models"), model)
    if window:
        return replace(
            facts,
            server=LM_STUDIO,
            context_window=window,
            window_source=f"{LM_STUDIO} /api/v0/models",
        )
    window = window_from_ollama_show(asker.json("POST", f"{root}/api/show", {"model": model}))
    if window:
        return replace(
            facts, server=OLLAMA, context_window=window, window_source=f"{OLLAMA} /api/show"
        )
    return facts


# -- the process-wide answers --------------------------------------------------------------------


@dataclass
class _Entry:
    """One (server, model) probe: done once it answered; waiters wait on `done`."""

    done: threading.Event
    facts: ServerFacts | None = None


Prober = Callable[[ProviderConfig, str, float], ServerFacts]


class ServerCache:
    """What each server said, kept for the process; each server and model is asked once."""

    def __init__(self, prober: Prober = probe) -> None:
        self._prober = prober
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, str], _Entry] = {}
        self._learned: dict[tuple[str, str, str], tuple[int, str]] = {}

    @staticmethod
    def _key(config: ProviderConfig, model: str) -> tuple[str, str, str]:
        return (config.kind, config.base_url or "", model)

    def known(self, config: ProviderConfig, model: str) -> ServerFacts | None:
        """What is known now, without asking (None: nothing yet); a learned window wins."""
        key = self._key(config, model)
        with self._lock:
            entry = self._entries.get(key)
            learned = self._learned.get(key)
        facts = entry.facts if entry is not None else None
        if learned is not None:
            facts = replace(
                facts or ServerFacts(), context_window=learned[0], window_source=learned[1]
            )
        return facts

    def facts(
        self, config: ProviderConfig, model: str, timeout: float = PROBE_TIMEOUT_SECONDS
    ) -> ServerFacts | None:
        """Ask the server once (blocking, on the caller's thread); None when it may not be asked.

        A server that did not answer, or answered 503 (loading its model), is asked again
        next time: it may have been starting.
        """
        if not may_probe(config):
            return None
        key = self._key(config, model)
        with self._lock:
            entry = self._entries.get(key)
            mine = entry is None
            if mine:
                entry = self._entries[key] = _Entry(threading.Event())
        assert entry is not None
        if not mine:
            # Another thread asks: wait for its answer, a little longer than one probe takes.
            entry.done.wait(timeout * 5)
            return self.known(config, model)
        try:
            entry.facts = self._prober(config, model, timeout)
        except Exception:
            log.exception("discovery of %s failed", config.name)
            entry.facts = ServerFacts(reachable=False)
        finally:
            entry.done.set()
        answer = self.known(config, model)
        if not entry.facts.reachable or entry.facts.loading:
            with self._lock:  # said now, not kept: the next ask asks the server again
                if self._entries.get(key) is entry:
                    del self._entries[key]
        return answer

    def learn_window(self, config: ProviderConfig, model: str, window: int, source: str) -> None:
        """Remember a window the server stated itself (an overflow error names its size)."""
        with self._lock:
            self._learned[self._key(config, model)] = (window, source)

    def clear(self) -> None:
        """Forget everything (tests, a configuration reload)."""
        with self._lock:
            self._entries.clear()
            self._learned.clear()


SERVERS = ServerCache()
"""The process's answers: the agent asks, the context window reads them (agent/models.py)."""
