"""A real llama-server's own answers: its window, its model, its errors and its usage.

Issue 16 items 3, 4, 6 and 7 against llama.cpp itself (tests/realmodel/setup.sh builds it;
the `llama` fixture of tests/realmodel/conftest.py starts it). Answers are cut short with
`max_tokens`: what is measured is the server's own figures, not the model's prose.
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import yaml

from agent import events as ev
from agent.config import ProviderConfig, load_config
from agent.kinds import ErrorKind
from agent.loop import Agent
from agent.providers.discovery import LLAMA_CPP, probe

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]

SHORT = 24
"""Output tokens per answer: enough for a sentence, cheap on two cores."""
ANSWERED = ("ok", "truncated")
"""A turn the model answered: cut at SHORT tokens or not."""


def agent_on(server, home, workspace, events, *, kind="openai", model="smollm", **provider):
    base_url = server.base_url if kind == "openai" else server.base_url.removesuffix("/v1")
    llama = {"kind": kind, "base_url": base_url, "max_tokens": SHORT, **provider}
    data = {
        "model": f"llama:{model}",
        "providers": {"llama": llama},
        "agent": {"approval": "yolo", "retry_base_seconds": 0.01, "system_prompt": "Be brief."},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(data))
    return Agent(load_config(), sink=events.append, workspace=workspace)


def test_the_real_server_says_its_window_and_its_one_model(llama):
    server = llama(context=2048)
    provider = ProviderConfig("llama", base_url=server.base_url)
    started = time.monotonic()
    facts = probe(provider, "anything")
    elapsed = time.monotonic() - started
    assert facts.server == LLAMA_CPP
    assert facts.context_window == 2048
    assert facts.answers_any_model and facts.models[0].endswith(".gguf")
    assert elapsed < 1.0, elapsed  # loopback: milliseconds, never the start-up path


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_real_overflow_is_told_compacted_once_and_never_merged(
    llama, hermes_home, tmp_path, kind
):
    server = llama(context=512)
    events: list = []
    agent = agent_on(server, hermes_home, tmp_path, events, kind=kind)
    assert agent.run_turn("Say hello.").status in ANSWERED
    huge = "Please read this. " + "The quick brown fox jumps over the lazy dog. " * 80
    result = agent.run_turn(huge)
    # llama.cpp's exceed_context_size_error, known by its type: the advice, the window.
    assert result.status == "error"
    assert "/compact" in result.error and "512 tokens" in result.error
    assert [e.kind for e in events if isinstance(e, ev.TurnError)] == [ErrorKind.CONTEXT_LENGTH]
    assert any(
        "compacting it and retrying once" in e.text for e in events if isinstance(e, ev.Notice)
    )
    assert agent.context_window == 512  # learned from the server's own error
    assert result.withheld == huge
    # The next turn fits: the failed text is not sent again, merged or otherwise.
    events.clear()
    assert agent.run_turn("Say goodbye.").status in ANSWERED
    (usage,) = [e for e in events if isinstance(e, ev.UsageUpdated)]
    assert usage.context_tokens < 512  # the server's own count of the request it took
    agent.close()


def test_a_wrong_path_on_the_real_server_says_the_url_looks_wrong(llama, hermes_home, tmp_path):
    server = llama(context=2048)
    events: list = []
    agent = agent_on(server, hermes_home, tmp_path, events)
    name = agent.provider_name
    agent.config.providers[name] = dataclasses.replace(
        agent.config.providers[name], base_url=server.base_url + "/v1"
    )
    result = agent.run_turn("hello")
    assert "base_url looks wrong" in result.error and "File Not Found" in result.error
    agent.close()


def test_the_meter_on_the_real_anthropic_wire_counts_the_cached_prefix(
    llama, hermes_home, tmp_path
):
    server = llama(context=4096)
    events: list = []
    agent = agent_on(server, hermes_home, tmp_path, events, kind="anthropic")
    agent.run_turn("Name a colour.")
    agent.run_turn("Name another colour.")
    usage = [e for e in events if isinstance(e, ev.UsageUpdated)][-1]
    # llama.cpp reuses the first turn's prefix: its input_tokens leave that cached part out.
    assert usage.context_tokens > usage.input_tokens + usage.output_tokens
    assert usage.context_window == 4096, usage
    agent.close()


def test_a_real_single_model_server_records_the_model_it_serves(llama, hermes_home, tmp_path):
    server = llama(context=2048)
    events: list = []
    agent = agent_on(server, hermes_home, tmp_path, events, model="gpt-4o")
    assert agent.run_turn("hello").status in ANSWERED
    warnings = [e.text for e in events if isinstance(e, ev.Notice) and "serves one model" in e.text]
    assert len(warnings) == 1
    assert agent.model_name.endswith(".gguf")
    # The window is the server's, not the 128,000 the table knows for gpt-4o.
    assert agent.context_window == 2048
    agent.close()
