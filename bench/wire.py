"""The wire client slot, side by side over TLS on loopback, in one run.

Every variant streams the same request (same effective client arguments: key, URL, headers,
timeouts) to the same scripted server, running in its own process, over TLS with a
self-signed test CA; each call goes through the same request path (`RawStreamCall`: the SDK's
`client.post(..., stream=True)`) and the same SSE parse as `provider.stream`. The variants
differ only in the client's lifecycle:

- slot: `provider.stream` itself: the agent's `ClientSlot` (checkout / release, abort
  binding, credential pool) hands out its one cached SDK client; its draining transport keeps
  the one TLS connection across calls.
- bare: one SDK client built exactly as the slot builds its client (same httpx2 client,
  draining transport, shared TLS context), reused for every call with no slot around it.
- fresh: code without the slot: a new SDK client per call, built the way the SDK builds its
  default client (`openai.DefaultHttpxClient`: own pool, plain transport, own TLS context),
  so every call loads a trust store and does a TCP + TLS handshake, and the client is closed
  after the call. The per-call context is built with the slot's own recipe
  (`wire.new_tls_context`: the system trust store plus the test CA), so the fresh client and
  the slot's client trust exactly the same roots. (An SDK client left to its defaults loads
  the same system bundle; it would not trust the test CA, hence the recipe.)
- fresh_shared_tls: the fresh variant on the slot's shared, already loaded TLS context: what
  a fresh client costs besides the trust-store load (client build, TCP + TLS handshake,
  close). Printed so the share of the trust-store load in fresh_over_cached is visible.

No variant sleeps or does work the others do not. The variants run interleaved call by
call, in a seeded random order drawn anew for every set of calls (a call right after a fresh
client's call is slowed by the server tearing that connection down, so no variant may always
follow the same other one). Figures (ratios of median per-call times):

- wire.fresh_over_cached: fresh / slot (target >= 4).
- wire.cached_over_bare: slot / bare (target <= 1.05).
- wire.fresh_shared_tls_over_cached: fresh_shared_tls / slot (information).
- wire.conns_per_10_calls_{openai,anthropic}: TCP connections the server accepted for ten
  streamed calls through the slot (target 1).
"""

from __future__ import annotations

import argparse
import random
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
    parser.add_argument("--calls", type=int, default=240, help="calls per variant")
    args = parser.parse_args(argv)
    isolated_home()

    import openai

    from agent.config import ProviderConfig
    from agent.messages import Message
    from agent.providers.base import Abort, ChatRequest
    from agent.providers.factory import make_provider
    from agent.providers.sse import iter_sse
    from agent.providers.wire import new_tls_context, tls_context
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
    request = ChatRequest(model="bench", messages=[Message("user", "hi")])

    def provider(kind: str):
        base = server.openai_base_url if kind == "openai" else server.anthropic_base_url
        config = ProviderConfig(
            name="bench", kind=kind, base_url=base, api_key="sk-bench-key", ca_file=certfile
        )
        return make_provider(config, idle_timeout=30)

    slot_provider = provider("openai")
    # The same effective client arguments (key, URL, headers, timeouts) for every variant.
    kwargs = slot_provider.client_kwargs(slot_provider.api_key)

    def via_slot() -> None:
        for _ in slot_provider.stream(request, Abort()):
            pass

    def one_call(client) -> None:
        # The slot's request path without the slot: the same POST through the SDK client and
        # the same SSE parse as `provider.stream`.
        with slot_provider._open(client, request, {}) as call:
            for _ in slot_provider._parse(iter_sse(call.http_response)):
                pass

    def fresh_client_call(context) -> None:
        sdk = {k: v for k, v in kwargs.items() if k != "ca_file"}
        client = openai.OpenAI(
            **sdk, http_client=openai.DefaultHttpxClient(verify=context, timeout=kwargs["timeout"])
        )
        try:
            one_call(client)
        finally:
            client.close()

    def via_fresh() -> None:
        # Code without the slot: a new SDK client per call, built as the SDK builds its own
        # default one (openai.DefaultHttpxClient: its own pool, plain transport, its own TLS
        # context), closed when the call is done. Its TLS context is built per call with the
        # slot's recipe (wire.new_tls_context: the system trust store plus the test CA), so
        # the fresh client and the slot's client trust the same roots.
        fresh_client_call(new_tls_context(certfile))

    def via_fresh_shared_tls() -> None:
        # The same, but on the slot's shared TLS context: what is left of the cost without the
        # trust-store load (client build, TCP + TLS handshake, close).
        fresh_client_call(tls_context(certfile))

    # One bare reused SDK client, built exactly as the slot builds its client.
    bare = openai.OpenAI(**slot_provider.sdk_kwargs(kwargs))

    def via_bare() -> None:
        one_call(bare)

    variants = {
        "fresh": via_fresh,
        "fresh_shared_tls": via_fresh_shared_tls,
        "slot": via_slot,
        "bare": via_bare,
    }
    for fn in variants.values():  # warm up: imports, first handshakes
        for _ in range(3):
            fn()
    timings: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants.items())
    shuffle = random.Random(5).shuffle
    for _ in range(args.calls):
        # Interleaved call by call, so a slow spell of the (shared, noisy) machine hits every
        # variant alike, in a fresh (seeded) random order each time: a call right after a
        # fresh client's call runs while the server still tears that connection down, so no
        # variant may always follow the same other one.
        shuffle(order)
        for name, fn in order:
            started = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - started)

    slot = median(timings["slot"])
    figure("wire.fresh_over_cached", median(timings["fresh"]) / slot)
    figure("wire.cached_over_bare", slot / median(timings["bare"]))
    figure("wire.fresh_shared_tls_over_cached", median(timings["fresh_shared_tls"]) / slot)
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
