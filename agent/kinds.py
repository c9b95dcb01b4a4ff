"""The named states and kinds the agent reports, as StrEnums.

Each value equals the bare string used before, so JSON output, stored rows and comparisons
with plain strings are unchanged (`TurnStatus.OK == "ok"`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class TurnStatus(StrEnum):
    """How a turn ended (`TurnResult.status`, `TurnFinished.status`)."""

    OK = "ok"
    ERROR = "error"
    STOPPED = "stopped"
    BUDGET = "budget"
    """`agent.max_iterations` model calls were spent (A1)."""
    TRUNCATED = "truncated"
    """The answer was cut off at the model's output limit."""
    CAPPED = "capped"
    """A call was not sent: it would have passed a spend cap, or its size was declined ($2)."""


class CallPurpose(StrEnum):
    """What a model call was for (`UsageUpdated.purpose`): only a turn's call measures context."""

    TURN = "turn"
    SUMMARY = "summary"
    """A compaction's summary request (C1)."""
    SUBAGENT = "subagent"
    """A call of a subagent a `task` call ran: counted in its parent session (G1)."""


class BusyInputMode(StrEnum):
    """What Enter does while a turn runs (`agent.busy_input_mode`, T1)."""

    QUEUE = "queue"
    STEER = "steer"
    INTERRUPT = "interrupt"


class Phase(StrEnum):
    """What the agent is doing now (`Agent.phase`)."""

    IDLE = "idle"
    MODEL = "model"
    """A turn runs and is (or is about to be) in a model call: a redirect cancels it."""
    TOOLS = "tools"
    """A turn runs its tool batch: a redirect degrades to a steer (T5)."""
    COMPACTING = "compacting"
    """`/compact` runs outside a turn."""


class ErrorKind(StrEnum):
    """Why a turn or a provider call failed (`ProviderError.kind`, `TurnError.kind`)."""

    # Provider failures (K2); `ProviderError.retryable` says which ones a retry can help.
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    CONTEXT_LENGTH = "context_length"
    NOT_FOUND = "not_found"
    SERVER = "server"
    CONNECTION = "connection"
    TIMEOUT = "timeout"
    TRUNCATED = "truncated"
    MALFORMED = "malformed"
    BAD_REQUEST = "bad_request"
    GEMINI_LEGACY_KEY = "gemini_legacy_key"
    CONFIG = "config"
    EMPTY = "empty"
    """The model answered with no text and no tool call twice (A6)."""
    # Failures of the turn outside the provider.
    UPGRADED = "upgraded"
    """The installed code changed under the running app (L4)."""
    STORAGE = "storage"
    SPEND_CAP = "spend_cap"
    """A call not sent for a spend cap or a declined large request ($2)."""
    HOOK = "hook"
    """A prompt hook of the user's blocked the message (N4); the text goes back to them."""
    INTERNAL = "internal"
    OTHER = "error"
    """`TurnError`'s default when nothing more is known."""


class ApprovalMode(StrEnum):
    """`agent.approval`, and the session's mode: which tool calls need the user's yes (A4, N1)."""

    ASK = "ask"
    """Writes and shell need a yes in a modal."""
    AUTO_EDIT = "auto-edit"
    """File edits run without asking (protected paths still ask, H3); shell asks."""
    PLAN = "plan"
    """No file changes: edits and writes are refused; shell runs read-only (N1)."""
    YOLO = "yolo"
    """Nothing asks, not even a write to a protected path (H3)."""


class SandboxMode(StrEnum):
    """`sandbox:` in config.yaml: confine run_shell with bubblewrap when it works, always, never."""

    AUTO = "auto"
    ON = "on"
    OFF = "off"


class TodoStatus(StrEnum):
    """How far one item of the model's todo list is (N2)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"


class ToolOutcome(StrEnum):
    """How a tool call ended: the one place that works it out, for the result the agent
    keeps, the live `ToolFinished` event and a stored row read back on resume."""

    OK = "ok"
    ERROR = "error"
    """The tool failed or refused, or the turn was stopped before the call ran."""
    DECLINED = "declined"
    """The user said no: nothing ran."""

    @classmethod
    def of(cls, ok: bool, declined: bool = False) -> ToolOutcome:
        """The outcome of a result that is `ok` or not; a declined call is never ok."""
        if declined:
            return cls.DECLINED
        return cls.OK if ok else cls.ERROR

    @classmethod
    def recorded(cls, metadata: Any) -> ToolOutcome | None:
        """The outcome a stored tool row's `display_metadata` records; None when it records
        none (a row kept before outcomes were)."""
        if not isinstance(metadata, dict) or metadata.get("ok") is None:
            return None
        return cls.of(bool(metadata["ok"]), metadata.get("outcome") == cls.DECLINED)


IMAGES_KEY = "images"
"""The `display_metadata` key of a row's images: each one's reference (`ImagePart.ref`); the
bytes are kept once per session in the store's blobs (SPEC G4)."""
