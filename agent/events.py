"""Typed events the agent emits to its sink (called from the worker thread)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from agent.kinds import CallPurpose, ErrorKind, ToolOutcome, TurnStatus

# Events are NamedTuples: immutable like frozen dataclasses, but about ten times cheaper to
# define (this module is on the app's start-up path) and cheaper to build per streamed chunk.
# Code tells them apart by type (isinstance), never by ==, since tuples compare by value.


class TurnStarted(NamedTuple):
    """A turn began for `session_id` with the user's `text`."""

    session_id: str
    text: str


class InputAttached(NamedTuple):
    """The user's `@path` mentions were attached (or refused): one plain dict each (P2)."""

    attachments: tuple[Mapping[str, Any], ...]


class RequestStarted(NamedTuple):
    """A model call started (iteration counts from 1 within the turn)."""

    iteration: int
    model: str
    provider: str


class ReasoningDelta(NamedTuple):
    """A piece of streamed reasoning: display-only, never stored or replayed (R1)."""

    text: str


class TextDelta(NamedTuple):
    """A piece of the streamed visible answer."""

    text: str


class ToolCallDelta(NamedTuple):
    """The model is streaming a tool call (name known, arguments growing)."""

    # The field shadows tuple.index (never called on an event), and keeps its name: it is
    # a key of `run --json`'s output.
    index: int  # type: ignore[assignment]
    name: str


class StreamReset(NamedTuple):
    """A retried attempt replaces the failed attempt's partial output (W11)."""

    reason: str


class AssistantMessage(NamedTuple):
    """A finished assistant message (visible text and the tool calls it made)."""

    content: str
    tool_calls: tuple[dict[str, Any], ...] = ()


class ToolStarted(NamedTuple):
    """A tool call began running."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str


class ToolAwaitingApproval(NamedTuple):
    """A started tool call waits for the user's answer; it is not running yet."""

    call_id: str
    name: str


class ToolApprovalAnswered(NamedTuple):
    """The user answered a tool call's approval after `waited` seconds; no means it never runs."""

    call_id: str
    approved: bool
    waited: float


class ToolFinished(NamedTuple):
    """A tool call finished; `ok` is False for errors and refusals, `declined` after a no.

    `duration` is the call's own time: a wait for the user's approval is left out.
    """

    call_id: str
    name: str
    ok: bool
    output: str
    duration: float
    declined: bool = False
    display: Mapping[str, Any] = MappingProxyType({})
    """What the transcript shows besides the output: a file change's diff (X1)."""

    @property
    def outcome(self) -> ToolOutcome:
        """Ok, error or declined."""
        return ToolOutcome.of(self.ok, self.declined)


class UsageUpdated(NamedTuple):
    """Token usage of one model call plus the session's running totals.

    The totals are the session's: what was stored when it was resumed plus this run's calls.
    `estimated`: the server sent no usage for this call (it was stopped or failed), so its
    counts are estimates (the status panel marks them "~"). `purpose`: what the call was
    for; only a turn's call (`CallPurpose.TURN`) measures the conversation's context.

    `context_tokens`: what the call left in the model's context, its whole prompt (cached
    tokens included, on either wire) plus its output; `context_window`: the model's window
    (None: unknown). The context bar shows the one over the other.
    """

    input_tokens: int
    output_tokens: int
    total_input_tokens: int
    total_output_tokens: int
    cost_usd: float | None = None
    total_cost_usd: float | None = None
    estimated: bool = False
    purpose: CallPurpose = CallPurpose.TURN
    context_tokens: int = 0
    context_window: int | None = None
    cache_read_tokens: int = 0
    """Prompt tokens this call read from the provider's cache ($1)."""
    cache_write_tokens: int = 0
    """Prompt tokens this call wrote to the cache (Anthropic's breakpoints)."""
    total_cache_read_tokens: int = 0
    total_cache_write_tokens: int = 0
    cost_source: str | None = None
    """Where this call's cost came from: config | table | server | local (None: unknown)."""
    total_cost_estimated: bool = False
    """The session's cost includes a call priced from the built-in table (shown `~`, $2)."""


class Retrying(NamedTuple):
    """A transient failure; the agent retries after `delay` seconds."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str

    @property
    def progress(self) -> str:
        """`n/m` for the user: this retry's number (the first is 1) of the retries there can
        be (`attempt` counts the first try too)."""
        return f"{max(1, self.attempt - 1)}/{max(1, self.max_attempts - 1)}"


class Notice(NamedTuple):
    """A short message for the user (level: info | warning | error)."""

    text: str
    level: str = "info"


class SavingFailed(NamedTuple):
    """The session's writes fail (S7), or only wait for another process's lock (H7): `waiting`.

    Said once per kind of trouble; `message` is the sentence for the user.
    """

    message: str
    waiting: bool = False


class DisplayRow(NamedTuple):
    """A typed display-only row was written (model switch, steer marker, ...) (D1)."""

    kind: str
    metadata: Mapping[str, Any] = MappingProxyType({})


class TurnError(NamedTuple):
    """The turn ended on an error; `message` says what to do."""

    message: str
    kind: ErrorKind = ErrorKind.OTHER


class TurnFinished(NamedTuple):
    """How the turn ended."""

    status: TurnStatus
    text: str
    pending_steer: str | None = None


def stopped_on_the_way() -> TurnFinished:
    """The end of a turn stopped before it began (Z1): the event its worker sends, and the
    one a front end shows when the worker was never started."""
    return TurnFinished(TurnStatus.STOPPED, "")


class CompactionStarted(NamedTuple):
    """Context compaction began (manual /compact or automatic)."""

    reason: str = "manual"


class CompactionProgress(NamedTuple):
    """The summary is streaming: `summary_tokens` estimated so far."""

    summary_tokens: int


class CompactionFinished(NamedTuple):
    """Compaction ended: `ok`, how many messages it summarised, and a line for the user."""

    ok: bool
    summarised: int = 0
    message: str = ""


class McpStatus(NamedTuple):
    """MCP servers changed: how many are in each state, and the one that changed."""

    ready: int
    starting: int
    failed: int
    total: int
    server: str = ""
    state: str = ""
    error: str = ""


class McpWaiting(NamedTuple):
    """A turn waits for MCP servers that are still starting (`names`; empty: done waiting)."""

    names: tuple[str, ...] = ()


class TodosChanged(NamedTuple):
    """The model wrote its todo list (N2): every item, in order, and how many are done."""

    items: tuple[Mapping[str, str], ...]
    done: int
    total: int


class SubagentProgress(NamedTuple):
    """What the subagent of `task` call `call_id` is doing (G1): its type and job, the
    tool call it runs or ran last ("" before its first), how many it made, its tokens."""

    call_id: str
    agent_type: str
    description: str
    tool: str = ""
    tool_calls: int = 0
    tokens: int = 0
    session_id: str | None = None


AgentEvent = (
    TurnStarted
    | InputAttached
    | RequestStarted
    | ReasoningDelta
    | TextDelta
    | ToolCallDelta
    | StreamReset
    | AssistantMessage
    | ToolStarted
    | ToolAwaitingApproval
    | ToolApprovalAnswered
    | ToolFinished
    | UsageUpdated
    | Retrying
    | Notice
    | SavingFailed
    | DisplayRow
    | TurnError
    | TurnFinished
    | CompactionStarted
    | CompactionProgress
    | CompactionFinished
    | McpStatus
    | McpWaiting
    | TodosChanged
    | SubagentProgress
)
"""Any event the agent emits."""

Sink = Callable[[AgentEvent], None]
"""Where the agent sends its events; called from the worker thread."""

STREAMED_TEXT = (TextDelta, ReasoningDelta)
"""The events that carry a piece of streamed text (adjacent ones of a kind may be joined)."""
