"""The session's approval mode: its names, the shift+Tab cycle, how it is kept (N1)."""

from __future__ import annotations

from typing import Any, Protocol

from agent.kinds import ApprovalMode

MODE_KEY = "approval_mode"
"""The session metadata key that keeps the session's mode (N1)."""

CYCLE = (ApprovalMode.ASK, ApprovalMode.AUTO_EDIT, ApprovalMode.PLAN)
"""What the mode key steps through, in order; yolo is never a keypress away."""

PLAN_NO_CHANGES = (
    "Refused: the session is in plan mode, where no file is changed. Describe the change "
    "in your answer instead; the user leaves plan mode to let you make it."
)
"""What the model reads when a file tool is called in plan mode."""

SUMMARIES = {
    ApprovalMode.ASK: "edits and shell commands ask first",
    ApprovalMode.AUTO_EDIT: "edits run unasked; shell commands ask",
    ApprovalMode.PLAN: "no file changes; shell read-only",
    ApprovalMode.YOLO: "nothing asks",
}
"""One line on what each mode does, for the notice a switch leaves."""


class ModeHost(Protocol):
    """What switching the mode uses of the agent."""

    approval_mode: ApprovalMode

    @property
    def session_id(self) -> str | None: ...
    def keep_metadata(self, key: str, value: Any) -> None: ...


def switch_mode(agent: ModeHost, mode: str) -> None:
    """Switch `agent`'s approval mode: its next tool batch uses it; kept with the session."""
    agent.approval_mode = ApprovalMode(mode)
    if agent.session_id is not None:
        agent.keep_metadata(MODE_KEY, str(agent.approval_mode))


def next_in_cycle(mode: str) -> ApprovalMode:
    """The mode after `mode` in the cycle; from yolo (not in it) the cycle starts at ask."""
    if mode not in CYCLE:
        return CYCLE[0]
    return CYCLE[(CYCLE.index(ApprovalMode(mode)) + 1) % len(CYCLE)]


def parse_mode(text: str) -> ApprovalMode | None:
    """The mode `text` names (case and spaces aside; `auto_edit` too), or None."""
    word = text.strip().lower().replace("_", "-")
    try:
        return ApprovalMode(word)
    except ValueError:
        return None


def stored_mode(metadata: dict[str, Any] | None, default: str) -> ApprovalMode:
    """The mode a stored session resumes in: the one kept with it, else `default`.

    yolo is never restored (it is turned on deliberately in each run: the config, or a
    confirmed `/mode yolo`); a session kept in yolo resumes in `default`.
    """
    kept = parse_mode(str((metadata or {}).get(MODE_KEY) or ""))
    if kept is None or kept == ApprovalMode.YOLO:
        return ApprovalMode(default)
    return kept
