"""The OpenAI chat-completions wire (OpenAI, OpenRouter, Gemini, xAI, Nous, Ollama, vLLM)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agent.messages import to_openai
from agent.providers.base import (
    ChatRequest,
    FinishPart,
    ReasoningPart,
    StreamPart,
    TextPart,
    ToolCallPart,
    UsagePart,
)
from agent.providers.cache_points import mark_openrouter, uses_breakpoints
from agent.providers.discovery import host
from agent.providers.errors import ProviderError
from agent.providers.sdk_compat import RawStreamCall
from agent.providers.streaming import SDKCall, merged_body

_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "function_call": "tool_calls"}


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral tool schemas -> the chat-completions `tools` list."""
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def normalise_finish(reason: str) -> str:
    """Map an OpenAI finish_reason onto stop | tool_calls | length | other."""
    if reason == "length":
        return "length"
    return _FINISH.get(reason, "other")


def usage_part(usage: dict[str, Any]) -> UsagePart:
    """The `usage` object of a chunk (sent once, near the end) as a UsagePart."""
    details = usage.get("prompt_tokens_details") or {}
    out_details = usage.get("completion_tokens_details") or {}
    return UsagePart(
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        cache_read_tokens=details.get("cached_tokens") or 0,
        # OpenRouter counts an Anthropic model's cache writes here (inside prompt_tokens).
        cache_write_tokens=details.get("cache_write_tokens") or 0,
        reasoning_tokens=out_details.get("reasoning_tokens") or 0,
        reported_cost=_reported_cost(usage.get("cost")),
    )


def _reported_cost(value: Any) -> float | None:
    """OpenRouter's cost of the call in USD ($2); anything but a number >= 0 is no cost."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


def tool_call_parts(calls: list[dict[str, Any]]) -> Iterator[ToolCallPart]:
    """A delta's `tool_calls` pieces as ToolCallParts, one at a time (the bounds check each)."""
    for call in calls:
        fn = call.get("function") or {}
        yield ToolCallPart(
            call.get("index", 0), call.get("id"), fn.get("name"), fn.get("arguments") or ""
        )


class OpenAIChatProvider(SDKCall):
    """Streams chat completions through the official openai SDK's request path."""

    wire = "openai"

    def _build_client(self, kwargs: dict[str, Any]) -> Any:
        import openai

        return openai.OpenAI(**self.sdk_kwargs(kwargs))

    def _sdk_errors(self) -> tuple[Any, Any, Any]:
        import openai

        return openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError

    def request_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of chat.completions.create for this request."""
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": to_openai(request.messages, request.system),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = openai_tools(request.tools)
        if request.max_tokens:
            kwargs["max_tokens"] = request.max_tokens
        if request.extra_body:
            kwargs["extra_body"] = request.extra_body
        if uses_breakpoints(self.config, request.model, host(self.config)):
            mark_openrouter(kwargs["messages"])
        return kwargs

    def _open(self, client: Any, request: ChatRequest, options: dict[str, Any]) -> Any:
        body = merged_body(self.request_kwargs(request))
        return RawStreamCall(client, "/chat/completions", body, options)

    def _parse(self, events: Iterator[tuple[str, str]]) -> Iterator[StreamPart]:
        finished = False
        for _event, data in events:
            if data == "[DONE]":
                break
            obj = self.decode(data)
            if "error" in obj and not obj.get("choices"):
                raise self.stream_error(obj)
            usage = obj.get("usage")
            if usage:
                yield usage_part(usage)
            for choice in obj.get("choices") or ():
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning and isinstance(reasoning, str):
                    yield ReasoningPart(reasoning)
                content = delta.get("content")
                if content:
                    yield TextPart(content)
                calls = delta.get("tool_calls")
                if calls:
                    yield from tool_call_parts(calls)
                reason = choice.get("finish_reason")
                if reason:
                    finished = True
                    yield FinishPart(normalise_finish(reason))
        if not finished:
            raise self.truncated()

    def stream_error(self, obj: dict[str, Any]) -> ProviderError:
        """An error object sent inside a 200 stream (OpenRouter does this)."""
        err = obj.get("error") or {}
        code = err.get("code") if isinstance(err, dict) else None
        status = code if isinstance(code, int) else 500
        return self.classify(status, obj, None)
