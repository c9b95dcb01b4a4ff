"""The Anthropic messages wire: thinking with signatures, text, tool_use, usage."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agent.messages import to_anthropic
from agent.providers.base import (
    Abort,
    ChatRequest,
    FinishPart,
    ReasoningPart,
    StreamPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UsagePart,
)
from agent.providers.errors import ProviderError
from agent.providers.streaming import RawStreamCall, SDKCall, merged_body

DEFAULT_MAX_TOKENS = 8192
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_ERROR_STATUS = {
    "overloaded_error": 529,
    "api_error": 500,
    "rate_limit_error": 429,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "invalid_request_error": 400,
    "request_too_large": 413,
}


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral tool schemas -> the messages API `tools` list."""
    return [
        {
            "name": t["name"],
            "description": t.get("description", ""),
            "input_schema": t.get("parameters") or {"type": "object", "properties": {}},
        }
        for t in tools
    ]


class AnthropicMessagesProvider(SDKCall):
    """Streams messages through the official anthropic SDK's request path."""

    wire = "anthropic"

    def _build_client(self, kwargs: dict[str, Any]) -> Any:
        import anthropic

        return anthropic.Anthropic(**self.sdk_kwargs(kwargs))

    def _sdk_errors(self) -> tuple[Any, Any, Any]:
        import anthropic

        return anthropic.APIStatusError, anthropic.APIConnectionError, anthropic.APITimeoutError

    def request_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of messages.create for this request."""
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": to_anthropic(request.messages),
            "max_tokens": request.max_tokens or self.config.max_tokens or DEFAULT_MAX_TOKENS,
            "stream": True,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = anthropic_tools(request.tools)
        if self.config.thinking_budget:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": self.config.thinking_budget}
        if request.extra_body:
            kwargs["extra_body"] = request.extra_body
        return kwargs

    def _open(self, client: Any, request: ChatRequest, options: dict[str, Any]) -> Any:
        body = merged_body(self.request_kwargs(request))
        return RawStreamCall(client, "/v1/messages", body, options)

    def _parse(self, events: Iterator[tuple[str, str]], abort: Abort) -> Iterator[StreamPart]:
        usage = UsagePart()
        stop_reason: str | None = None
        blocks: dict[int, dict[str, Any]] = {}
        for event, data in events:
            obj = self.decode(data)
            kind = obj.get("type") or event
            if kind == "content_block_delta":
                index = obj.get("index", 0)
                delta = obj.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta":
                    yield TextPart(delta.get("text", ""))
                elif dtype == "thinking_delta":
                    text = delta.get("thinking", "")
                    blocks.setdefault(index, {"type": "thinking", "text": [], "sig": ""})
                    blocks[index]["text"].append(text)
                    yield ReasoningPart(text)
                elif dtype == "signature_delta":
                    blocks.setdefault(index, {"type": "thinking", "text": [], "sig": ""})
                    blocks[index]["sig"] += delta.get("signature", "")
                elif dtype == "input_json_delta":
                    yield ToolCallPart(index, None, None, delta.get("partial_json", ""))
            elif kind == "content_block_start":
                index = obj.get("index", 0)
                block = obj.get("content_block") or {}
                btype = block.get("type")
                if btype == "tool_use":
                    yield ToolCallPart(index, block.get("id"), block.get("name"), "")
                elif btype == "thinking":
                    blocks[index] = {
                        "type": "thinking",
                        "text": [block.get("thinking", "")],
                        "sig": block.get("signature", "") or "",
                    }
                elif btype == "redacted_thinking":
                    yield ThinkingPart("", "", block.get("data", ""))
                elif btype == "text" and block.get("text"):
                    yield TextPart(block["text"])
            elif kind == "content_block_stop":
                block = blocks.pop(obj.get("index", 0), None)
                if block is not None:
                    yield ThinkingPart("".join(block["text"]), block["sig"])
            elif kind == "message_start":
                u = (obj.get("message") or {}).get("usage") or {}
                usage.input_tokens = u.get("input_tokens") or 0
                usage.cache_read_tokens = u.get("cache_read_input_tokens") or 0
                usage.cache_write_tokens = u.get("cache_creation_input_tokens") or 0
                usage.output_tokens = u.get("output_tokens") or 0
            elif kind == "message_delta":
                stop_reason = (obj.get("delta") or {}).get("stop_reason") or stop_reason
                u = obj.get("usage") or {}
                if u.get("output_tokens") is not None:
                    usage.output_tokens = u["output_tokens"]
                if u.get("input_tokens"):
                    usage.input_tokens = u["input_tokens"]
            elif kind == "message_stop":
                if stop_reason is None:
                    raise self.truncated()
                yield usage
                yield FinishPart(_STOP.get(stop_reason, "other"))
                return
            elif kind == "error":
                raise self._stream_error(obj)
        # The SDK raises nothing for a stream cut short: no message_stop means truncated (W10).
        raise self.truncated()

    def _stream_error(self, obj: dict[str, Any]) -> ProviderError:
        err = obj.get("error") or {}
        status = _ERROR_STATUS.get(err.get("type", ""), 500)
        return self.classify(status, obj, None)
