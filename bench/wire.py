"""The wire client slot, side by side over TLS on loopback, in one run.

- wire.fresh_over_cached: per-call time with a fresh SDK client per call / with the slot.
- wire.cached_over_bare: per-call time with the slot / with one bare reused SDK client.
- wire.conns_per_10_calls_{openai,anthropic}: TCP connections the server accepted for ten
  streamed calls through the slot.
"""

from __future__ import annotations

import argparse
import json
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench._common import figure, isolated_home, median

SCRIPT = {"loop": True, "replies": [{"text": "A short streamed answer. " * 4, "chunk_size": 16}]}


def _cert(where: Path) -> tuple[str, str]:
    from agent.scripted.certs import OpenSSLMissing, self_signed_cert

    try:
        return self_signed_cert(where)
    except OpenSSLMissing as exc:
        raise SystemExit(f"bench wire: {exc}") from None


class _Remote:
    """Base URLs of the scripted server running in a subprocess."""

    def __init__(self, url: str) -> None:
        self.openai_base_url = url + "/v1"
        self.anthropic_base_url = url


def main(argv: list[str]) -> int:
    """Run the wire benchmark and print its figures."""
    parser = argparse.ArgumentParser(prog="python3 -m bench wire")
    parser.add_argument("--calls", type=int, default=60, help="calls per variant and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args(argv)
    isolated_home()

    import httpx2
    import openai

    from agent.config import ProviderConfig
    from agent.messages import Message
    from agent.providers.base import Abort, ChatRequest
    from agent.providers.factory import make_provider
    from agent.providers.wire import build_http_client, tls_context
    from agent.scripted import Script, ScriptedServer

    where = Path(tempfile.mkdtemp(prefix="hermes-bench-tls-"))
    certfile, keyfile = _cert(where)
    # Timings against a server in its own process (it must not share our GIL); connection
    # counts against an in-process one (it counts what it accepts).
    counter = ScriptedServer(Script.from_dict(SCRIPT), certfile=certfile, keyfile=keyfile).start()
    script = where / "script.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.scripted", "--script", str(script),
         "--certfile", certfile, "--keyfile", keyfile],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = proc.stdout.readline().strip().rsplit(" ", 1)[-1]
    server = _Remote(url)
    messages = [{"role": "user", "content": "hi"}]
    request = ChatRequest(model="bench", messages=[Message("user", "hi")])

    def provider(kind: str):
        base = server.openai_base_url if kind == "openai" else server.anthropic_base_url
        config = ProviderConfig(
            name="bench", kind=kind, base_url=base, api_key="sk-bench-key", ca_file=certfile
        )
        return make_provider(config, idle_timeout=30)

    slot_provider = provider("openai")

    def via_slot() -> None:
        for _ in slot_provider.stream(request, Abort()):
            pass

    def via_fresh() -> None:
        # The old lifecycle: a new SDK client per call, as code without the slot builds it:
        # its own TLS context (trust store loaded), its own pool, a TCP + TLS handshake.
        client = openai.OpenAI(
            base_url=server.openai_base_url,
            api_key="sk-bench-key",
            max_retries=0,
            http_client=httpx2.Client(verify=ssl.create_default_context(cafile=certfile)),
        )
        try:
            stream_lines(client)
        finally:
            client.close()

    bare = openai.OpenAI(
        base_url=server.openai_base_url,
        api_key="sk-bench-key",
        max_retries=0,
        http_client=build_http_client(timeout=30, ca_file=certfile, proxies=False),
    )
    tls_context(certfile)

    def stream_lines(client) -> None:
        with client.chat.completions.with_streaming_response.create(
            model="bench", messages=messages, stream=True
        ) as response:
            for line in response.http_response.iter_lines():
                if line.startswith("data: {"):
                    json.loads(line[6:])

    def via_bare() -> None:
        stream_lines(bare)

    variants = {"fresh": via_fresh, "slot": via_slot, "bare": via_bare}
    for fn in variants.values():  # warm up: imports, first handshakes
        for _ in range(3):
            fn()
    timings: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, fn in variants.items():
            for _ in range(args.calls):
                started = time.perf_counter()
                fn()
                timings[name].append(time.perf_counter() - started)

    figure("wire.fresh_over_cached", median(timings["fresh"]) / median(timings["slot"]))
    figure("wire.cached_over_bare", median(timings["slot"]) / median(timings["bare"]))
    server = counter
    for kind in ("openai", "anthropic"):
        counted = provider(kind)
        before = server.connections_accepted
        for _ in range(10):
            for _ in counted.stream(request, Abort()):
                pass
        figure(f"wire.conns_per_10_calls_{kind}", server.connections_accepted - before)
        counted.close()
    slot_provider.close()
    bare.close()
    counter.stop()
    proc.terminate()
    proc.wait(5)
    return 0
