"""Typed events the agent emits to its sink (called from the worker thread)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """Base class of every event the agent emits."""


@dataclass(frozen=True, slots=True)
class TurnStarted(AgentEvent):
    """A turn began for `session_id` with the user's `text`."""

    session_id: str
    text: str


@dataclass(frozen=True, slots=True)
class RequestStarted(AgentEvent):
    """A model call started (iteration counts from 1 within the turn)."""

    iteration: int
    model: str
    provider: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta(AgentEvent):
    """A piece of streamed reasoning: display-only, never stored or replayed (R1)."""

    text: str


@dataclass(frozen=True, slots=True)
class TextDelta(AgentEvent):
    """A piece of the streamed visible answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta(AgentEvent):
    """The model is streaming a tool call (name known, arguments growing)."""

    index: int
    name: str


@dataclass(frozen=True, slots=True)
class StreamReset(AgentEvent):
    """A retried attempt replaces the failed attempt's partial output (W11)."""

    reason: str


@dataclass(frozen=True, slots=True)
class AssistantMessage(AgentEvent):
    """A finished assistant message (visible text and the tool calls it made)."""

    content: str
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ToolStarted(AgentEvent):
    """A tool call began running."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str


@dataclass(frozen=True, slots=True)
class ToolFinished(AgentEvent):
    """A tool call finished; `ok` is False for errors and refusals."""

    call_id: str
    name: str
    ok: bool
    output: str
    duration: float


@dataclass(frozen=True, slots=True)
class UsageUpdated(AgentEvent):
    """Token usage of one model call plus the session's running totals."""

    input_tokens: int
    output_tokens: int
    total_input_tokens: int
    total_output_tokens: int
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Retrying(AgentEvent):
    """A transient failure; the agent retries after `delay` seconds."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class Notice(AgentEvent):
    """A short message for the user (level: info | warning | error)."""

    text: str
    level: str = "info"


@dataclass(frozen=True, slots=True)
class DisplayRow(AgentEvent):
    """A typed display-only row was written (model switch, steer marker, ...) (D1)."""

    kind: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnError(AgentEvent):
    """The turn ended on an error; `message` says what to do."""

    message: str
    kind: str = "error"


@dataclass(frozen=True, slots=True)
class TurnFinished(AgentEvent):
    """The turn ended; `status` is one of ok | error | stopped | budget | truncated."""

    status: str
    text: str
    pending_steer: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionStarted(AgentEvent):
    """Context compaction began (manual /compact or automatic)."""

    reason: str = "manual"


@dataclass(frozen=True, slots=True)
class CompactionProgress(AgentEvent):
    """The summary is streaming: `summary_tokens` estimated so far."""

    summary_tokens: int


@dataclass(frozen=True, slots=True)
class CompactionFinished(AgentEvent):
    """Compaction ended: `ok`, how many messages it summarised, and a line for the user."""

    ok: bool
    summarised: int = 0
    message: str = ""
