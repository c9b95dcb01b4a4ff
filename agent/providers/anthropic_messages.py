"""The Anthropic messages wire: thinking with signatures, text, tool_use, usage."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agent.messages import to_anthropic
from agent.providers.base import (
    ChatRequest,
    FinishPart,
    ReasoningPart,
    StreamPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UsagePart,
)
from agent.providers.cache_points import mark_anthropic, uses_breakpoints
from agent.providers.discovery import host
from agent.providers.errors import ProviderError
from agent.providers.sdk_compat import RawStreamCall
from agent.providers.streaming import SDKCall, merged_body

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


@dataclass(slots=True)
class _Thinking:
    """A thinking block still streaming: its text pieces and its signature so far."""

    text: list[str] = field(default_factory=list)
    signature: str = ""


def _thinking(blocks: dict[int, _Thinking], index: int) -> _Thinking:
    block = blocks.get(index)
    if block is None:
        blocks[index] = block = _Thinking()
    return block


def _other_delta(
    blocks: dict[int, _Thinking], index: int, dtype: Any, delta: dict[str, Any]
) -> StreamPart | None:
    """A content delta other than answer text: reasoning, a signature, tool-call arguments."""
    if dtype == "thinking_delta":
        text = delta.get("thinking", "")
        _thinking(blocks, index).text.append(text)
        return ReasoningPart(text)
    if dtype == "signature_delta":
        _thinking(blocks, index).signature += delta.get("signature", "")
    elif dtype == "input_json_delta":
        return ToolCallPart(index, None, None, delta.get("partial_json", ""))
    return None


def _block_start(blocks: dict[int, _Thinking], obj: dict[str, Any]) -> StreamPart | None:
    """A content block opens: a tool call, a thinking block, redacted thinking or text."""
    index = obj.get("index", 0)
    block = obj.get("content_block") or {}
    btype = block.get("type")
    if btype == "tool_use":
        return ToolCallPart(index, block.get("id"), block.get("name"), "")
    if btype == "thinking":
        blocks[index] = _Thinking([block.get("thinking", "")], block.get("signature", "") or "")
    elif btype == "redacted_thinking":
        return ThinkingPart("", "", block.get("data", ""))
    elif btype == "text" and block.get("text"):
        return TextPart(block["text"])
    return None


def _start_usage(usage: UsagePart, u: dict[str, Any]) -> None:
    """`message_start`'s usage: the input side, and the output counted so far."""
    usage.input_tokens = u.get("input_tokens") or 0
    usage.cache_read_tokens = u.get("cache_read_input_tokens") or 0
    usage.cache_write_tokens = u.get("cache_creation_input_tokens") or 0
    usage.output_tokens = u.get("output_tokens") or 0


def _delta_usage(usage: UsagePart, u: dict[str, Any]) -> None:
    """`message_delta`'s usage: the output total, and the input side when it is given again
    (its counts are cumulative: the cached parts too, which the context meter adds up)."""
    if u.get("output_tokens") is not None:
        usage.output_tokens = u["output_tokens"]
    if u.get("input_tokens"):
        usage.input_tokens = u["input_tokens"]
    if u.get("cache_read_input_tokens"):
        usage.cache_read_tokens = u["cache_read_input_tokens"]
    if u.get("cache_creation_input_tokens"):
        usage.cache_write_tokens = u["cache_creation_input_tokens"]


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
        if uses_breakpoints(self.config, request.model, host(self.config)):
            mark_anthropic(kwargs)
        return kwargs

    def _open(self, client: Any, request: ChatRequest, options: dict[str, Any]) -> Any:
        body = merged_body(self.request_kwargs(request))
        return RawStreamCall(client, "/v1/messages", body, options)

    def _parse(self, events: Iterator[tuple[str, str]]) -> Iterator[StreamPart]:
        usage = UsagePart()
        stop_reason: str | None = None
        blocks: dict[int, _Thinking] = {}  # thinking blocks still streaming, by index
        for event, data in events:
            obj = self.decode(data)
            kind = obj.get("type") or event
            if kind == "content_block_delta":
                delta = obj.get("delta") or {}
                dtype = delta.get("type")
                if dtype == "text_delta":  # the hot path: one part per answer chunk
                    yield TextPart(delta.get("text", ""))
                else:
                    part = _other_delta(blocks, obj.get("index", 0), dtype, delta)
                    if part is not None:
                        yield part
            elif kind == "content_block_start":
                part = _block_start(blocks, obj)
                if part is not None:
                    yield part
            elif kind == "content_block_stop":
                block = blocks.pop(obj.get("index", 0), None)
                if block is not None:
                    yield ThinkingPart("".join(block.text), block.signature)
            elif kind == "message_start":
                _start_usage(usage, (obj.get("message") or {}).get("usage") or {})
            elif kind == "message_delta":
                stop_reason = (obj.get("delta") or {}).get("stop_reason") or stop_reason
                _delta_usage(usage, obj.get("usage") or {})
            elif kind == "message_stop":
                finish = self._finish(stop_reason)  # before the usage: a truncated call has none
                yield usage
                yield finish
                return
            elif kind == "error":
                raise self._stream_error(obj)
        # The SDK raises nothing for a stream cut short: no message_stop means truncated (W10).
        raise self.truncated()

    def _finish(self, stop_reason: str | None) -> FinishPart:
        """The finish of a stream that said `message_stop`; truncated without a stop reason."""
        if stop_reason is None:
            raise self.truncated()
        return FinishPart(_STOP.get(stop_reason, "other"))

    def _stream_error(self, obj: dict[str, Any]) -> ProviderError:
        err = obj.get("error") or {}
        status = _ERROR_STATUS.get(err.get("type", ""), 500)
        return self.classify(status, obj, None)
