"""What every wire adapter shares: the request, the normalised stream parts, and the abort."""

from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.messages import Message


@dataclass
class ChatRequest:
    """One model call: the conversation, the tools offered and per-call options."""

    model: str
    messages: list[Message]
    system: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    wire: str | None = None
    """The wire it goes out on (`providers.NAME.kind`): how its images are counted (G4)."""


@dataclass(slots=True)
class ReasoningPart:
    """Streamed reasoning text (display-only)."""

    text: str


@dataclass(slots=True)
class TextPart:
    """Streamed answer text."""

    text: str


@dataclass(slots=True)
class ToolCallPart:
    """A piece of a tool call: the first piece of an index carries id and name."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(slots=True)
class ThinkingPart:
    """A complete Anthropic thinking block with its signature (empty when unsigned)."""

    thinking: str
    signature: str
    redacted_data: str = ""


@dataclass(slots=True)
class UsagePart:
    """Token usage reported by the provider for this call."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    reported_cost: float | None = None
    """USD the server says the call cost (OpenRouter's `usage.cost`); it wins over a table
    price ($2)."""
    estimated: bool = False
    """True when the server sent no usage (a stopped or failed call) and these are our
    estimates: the request's prompt size and the output streamed so far."""


@dataclass(slots=True)
class FinishPart:
    """The provider's finish reason, normalised: stop | tool_calls | length | other."""

    reason: str


StreamPart = ReasoningPart | TextPart | ToolCallPart | ThinkingPart | UsagePart | FinishPart

# A call's parts: a generator, so its caller can close it (and release its connection) early.
PartStream = Generator[StreamPart, None, None]


class Abort:
    """Cancels an in-flight stream from any thread by shutting its socket down (W4)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._lease: Any = None

    def bind(self, lease: Any) -> None:
        """Aim this abort at a client lease (the wire slot checks it is still the holder)."""
        with self._lock:
            self._lease = lease
            if self._event.is_set():
                lease.abort("stop")

    def unbind(self, lease: Any) -> None:
        """The request of `lease` is over: a later fire() no longer touches it."""
        with self._lock:
            if self._lease is lease:
                self._lease = None

    @property
    def fired(self) -> bool:
        """True once `fire()` was called."""
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds, waking early when fired; returns `fired`."""
        return self._event.wait(timeout)

    def fire(self) -> None:
        """Abort: mark fired and shut the lease's sockets down; the owner thread closes them."""
        with self._lock:
            self._event.set()
            if self._lease is not None:
                self._lease.abort("stop")


class Provider(Protocol):
    """A wire adapter: streams one model call as normalised parts."""

    name: str
    call_deadline: float | None
    """W9: the one cumulative deadline (monotonic) of a call's retries after a stall, or None."""

    def stream(self, request: ChatRequest, abort: Abort) -> PartStream:
        """Yield the parts of one streamed call; raise ProviderError on failure."""
        ...

    def close(self) -> None:
        """Release the adapter's client."""
        ...
