"""Each of agent/providers/sdk_compat.py's touches of the SDKs' internals still holds (#28).

A failure here names the compat function that an openai or anthropic upgrade broke; the
rest of the code reaches these internals only through it (test_compat_seams.py).
"""

from __future__ import annotations

import importlib

import anthropic
import httpx2
import openai
import pytest

from agent.providers.sdk_compat import RAW_RESPONSE_HEADER, RawStreamCall, sdk_http_client
from agent.providers.wire import build_http_client
from agent.scripted import Script, ScriptedServer

SDKS = {
    "openai": (openai.OpenAI, "openai_base_url", "/chat/completions"),
    "anthropic": (anthropic.Anthropic, "anthropic_base_url", "/v1/messages"),
}
KEY = "sk-compat-test-key-0123456789"


@pytest.fixture
def server():
    started = ScriptedServer(Script.from_dict({"loop": True, "replies": [{"text": "hi"}]}))
    started.start()
    yield started
    started.stop()


def _client(sdk: str, server: ScriptedServer, http: httpx2.Client):
    make, url, _path = SDKS[sdk]
    return make(api_key=KEY, base_url=getattr(server, url), max_retries=0, http_client=http)


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_the_raw_response_header_is_the_sdks_own(sdk):
    constants = importlib.import_module(f"{sdk}._constants")
    assert constants.RAW_RESPONSE_HEADER == RAW_RESPONSE_HEADER, (
        f"{sdk} renamed its raw-response header: fix sdk_compat.RawStreamCall"
    )


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_raw_stream_call_hands_back_the_response_unread(sdk, server):
    http = build_http_client(timeout=httpx2.Timeout(10.0))
    client = _client(sdk, server, http)
    body = {"model": "m", "stream": True, "max_tokens": 8}
    body["messages"] = [{"role": "user", "content": "hi"}]
    try:
        with RawStreamCall(client, SDKS[sdk][2], body, {"timeout": httpx2.Timeout(5.0)}) as call:
            response = call.http_response
            assert isinstance(response, httpx2.Response), (
                f"{sdk} no longer returns the httpx2 response: fix sdk_compat.RawStreamCall"
            )
            assert not response.is_stream_consumed, (
                f"{sdk} read the body of a raw-stream request: fix sdk_compat.RawStreamCall"
            )
            # The SDK's auth went with it, and the stream is ours to read.
            assert response.request.headers.get("authorization", "").endswith(KEY) or (
                response.request.headers.get("x-api-key") == KEY
            )
            assert b"hi" in b"".join(response.iter_bytes())
        assert response.is_closed
    finally:
        client.close()


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_sdk_http_client_finds_the_client_the_sdk_was_given(sdk, server):
    http = build_http_client(timeout=httpx2.Timeout(10.0))
    client = _client(sdk, server, http)
    try:
        assert sdk_http_client(client) is http, (
            f"{sdk} keeps its httpx2 client elsewhere: fix sdk_compat.sdk_http_client"
        )
        assert sdk_http_client(http) is http
    finally:
        client.close()
